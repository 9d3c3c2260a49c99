# Sourced by scripts/test: starts a throwaway PostgreSQL server on a Unix
# socket in a temp dir and exports HECTOR_TEST_POSTGRES_DSN for the tests.
# PostgreSQL refuses to run as root, so as root it runs as the postgres user.

pg_bin=${HECTOR_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}

start_postgres() {
  if [ ! -x "$pg_bin/pg_ctl" ]; then
    echo "scripts/test: no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin)." >&2
    echo "  Install them (apt-get install postgresql) or set HECTOR_TEST_POSTGRES_DSN to a server you run." >&2
    return 1
  fi
  pg_dir=$(mktemp -d /tmp/hector-pg.XXXXXX)
  local as=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$pg_dir"
    as=(runuser -u postgres --)
  fi
  # Text sorts by an English locale, as on most servers in production, not
  # by bytes: code that needs the bytes' order must ask for it. (ICU needs
  # PostgreSQL 15; an older one sorts by bytes.)
  "${as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U hector --auth=trust -E UTF8 \
    --locale-provider=icu --icu-locale=en-US --locale=C.UTF-8 >"$pg_dir/initdb.log" 2>&1 ||
    { rm -rf "$pg_dir/data" && "${as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U hector --auth=trust -E UTF8 >"$pg_dir/initdb.log" 2>&1; } ||
    { cat "$pg_dir/initdb.log" >&2; return 1; }
  "${as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -w -l "$pg_dir/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories=$pg_dir -c max_connections=300" start >/dev/null ||
    { cat "$pg_dir/server.log" >&2; return 1; }
  "${as[@]}" "$pg_bin/createdb" -h "$pg_dir" -U hector hector_test
  export HECTOR_TEST_POSTGRES_DSN="host=$pg_dir user=hector dbname=hector_test sslmode=disable"
  echo "scripts/test: $("$pg_bin/postgres" -V) running in $pg_dir"
}

stop_postgres() {
  [ -n "${pg_dir:-}" ] || return 0
  local as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
