# Sourced by scripts/test: starts a throwaway MariaDB server on a Unix
# socket in a temp dir (no TCP) and exports HECTOR_TEST_MYSQL_DSN.

start_mariadb() {
  local server
  server=$(command -v mariadbd || ls /usr/sbin/mariadbd 2>/dev/null || true)
  if [ -z "$server" ] || ! command -v mariadb-install-db >/dev/null; then
    echo "scripts/test: no MariaDB server found: the MySQL tests are skipped." >&2
    echo "  Install it (apt-get install mariadb-server) or set HECTOR_TEST_MYSQL_DSN to a server you run." >&2
    return 0
  fi
  my_dir=$(mktemp -d /tmp/hector-mariadb.XXXXXX)
  local user
  user=$(id -un)
  mariadb-install-db --no-defaults --datadir="$my_dir/data" --user="$user" --auth-root-authentication-method=socket \
    --skip-test-db >"$my_dir/install.log" 2>&1 || { cat "$my_dir/install.log" >&2; return 1; }
  "$server" --no-defaults --datadir="$my_dir/data" --socket="$my_dir/mysql.sock" --skip-networking \
    --pid-file="$my_dir/mariadb.pid" --user="$user" --log-error="$my_dir/error.log" \
    --innodb-buffer-pool-size=128M --max-connections=300 >"$my_dir/server.out" 2>&1 &
  my_pid=$!
  for _ in $(seq 1 100); do
    [ -S "$my_dir/mysql.sock" ] && mariadb --no-defaults -S "$my_dir/mysql.sock" -u root -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --no-defaults -S "$my_dir/mysql.sock" -u root -e \
    "CREATE USER hector@localhost; GRANT ALL ON *.* TO hector@localhost; CREATE DATABASE hector_test" ||
    { cat "$my_dir/error.log" >&2; return 1; }
  export HECTOR_TEST_MYSQL_DSN="hector@unix($my_dir/mysql.sock)/hector_test"
  echo "scripts/test: MariaDB $("$server" --version | awk '{print $3}') running in $my_dir"
}

stop_mariadb() {
  [ -n "${my_pid:-}" ] || return 0
  kill "$my_pid" 2>/dev/null && wait "$my_pid" 2>/dev/null || true
  rm -rf "$my_dir"
}
