# Sourced by scripts/test: builds the Weaviate server from the Go module
# proxy once (about 11 minutes on a fresh 2-core machine; the binary is kept in a cache directory and
# reused), starts a throwaway instance on loopback with its data in a temp
# dir, and exports HECTOR_TEST_WEAVIATE_ADDR for the tests.

weaviate_version=v1.35.2
weaviate_bin_dir=${HECTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hector}/weaviate-$weaviate_version

# free_port prints a TCP port nothing listens on now.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

# weaviate_ready succeeds when the server at port $1 says it is ready (bash
# only: curl may not be installed).
weaviate_ready() {
  local status
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET /v1/.well-known/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r _ status _ <&3
  exec 3>&-
  [ "$status" = 200 ]
}

build_weaviate() {
  [ -x "$weaviate_bin_dir/weaviate-server" ] && return 0
  echo "scripts/test: building the Weaviate server $weaviate_version from the Go module proxy (once; about 11 minutes on 2 cores)"
  mkdir -p "$weaviate_bin_dir"
  GOBIN="$weaviate_bin_dir" GOFLAGS=-mod=mod go install "github.com/weaviate/weaviate/cmd/weaviate-server@$weaviate_version"
}

# build_weaviate_in_background starts the build when the binary is not
# built yet; start_weaviate waits for it.
build_weaviate_in_background() {
  [ -x "$weaviate_bin_dir/weaviate-server" ] && return 0
  wv_build_log=$(mktemp /tmp/hector-weaviate-build.XXXXXX)
  echo "scripts/test: building the Weaviate server $weaviate_version in the background (once; about 11 minutes on 2 cores): its suites run last"
  build_weaviate >"$wv_build_log" 2>&1 &
  wv_build_pid=$!
}

stop_weaviate_build() {
  if [ -n "${wv_build_pid:-}" ]; then
    pkill -P "$wv_build_pid" 2>/dev/null || true
    kill "$wv_build_pid" 2>/dev/null || true
  fi
  if [ -n "${wv_build_log:-}" ]; then rm -f "$wv_build_log"; fi
  return 0
}

start_weaviate() {
  if [ -n "${wv_build_pid:-}" ]; then
    # Not `wait`: the tests run in a pipeline's subshell, of which the
    # build is not a child.
    while kill -0 "$wv_build_pid" 2>/dev/null; do sleep 1; done
    if [ ! -x "$weaviate_bin_dir/weaviate-server" ]; then
      echo "scripts/test: building the Weaviate server failed; its log:" >&2
      tail -n 40 "$wv_build_log" >&2
      return 1
    fi
  fi
  build_weaviate || return 1
  wv_dir=$(mktemp -d /tmp/hector-weaviate.XXXXXX)
  local http grpc gossip data raft raft_rpc
  http=$(free_port); grpc=$(free_port); gossip=$(free_port); data=$(free_port); raft=$(free_port); raft_rpc=$(free_port)
  (
    cd "$wv_dir"
    export PERSISTENCE_DATA_PATH="$wv_dir/data" AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
      DEFAULT_VECTORIZER_MODULE=none ENABLE_MODULES= CLUSTER_HOSTNAME=node1 CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
      CLUSTER_GOSSIP_BIND_PORT=$gossip CLUSTER_DATA_BIND_PORT=$data RAFT_PORT=$raft RAFT_INTERNAL_RPC_PORT=$raft_rpc \
      RAFT_BOOTSTRAP_EXPECT=1 GRPC_PORT=$grpc DISABLE_TELEMETRY=true LOG_LEVEL=warning \
      QUERY_DEFAULTS_LIMIT=100 PROMETHEUS_MONITORING_ENABLED=false \
      USE_INVERTED_SEARCHABLE=false # BlockMax WAND loses BM25 results: see docs/deploy.md
    exec "$weaviate_bin_dir/weaviate-server" --host 127.0.0.1 --port "$http" --scheme http >"$wv_dir/server.log" 2>&1
  ) &
  wv_pid=$!
  for _ in $(seq 1 120); do
    if weaviate_ready "$http"; then
      export HECTOR_TEST_WEAVIATE_ADDR="127.0.0.1:$http" HECTOR_TEST_WEAVIATE_GRPC_ADDR="127.0.0.1:$grpc"
      echo "scripts/test: Weaviate $weaviate_version running on 127.0.0.1:$http (gRPC $grpc) in $wv_dir"
      return 0
    fi
    if ! kill -0 "$wv_pid" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "scripts/test: Weaviate did not become ready; its log:" >&2
  tail -n 40 "$wv_dir/server.log" >&2
  return 1
}

stop_weaviate() {
  # Its status is the signal's: not a failure (scripts/test runs with set -e).
  if [ -n "${wv_pid:-}" ]; then kill "$wv_pid" 2>/dev/null && wait "$wv_pid" 2>/dev/null || true; fi
  wv_pid=
  if [ -n "${wv_dir:-}" ]; then rm -rf "$wv_dir"; fi
  return 0
}
