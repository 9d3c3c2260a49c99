# Sourced by scripts/test: installs what the tests need and this machine
# lacks, when it can (as root, or with sudo that asks no password): the
# PostgreSQL and MariaDB servers, Chromium (the console's browser tests),
# npm (the MCP Inspector and the TypeScript client's tests), python3 with
# venv (the Python client's tests) and promtool (checks /metrics). What it cannot
# install it names, and the tests that need it say so in the summary.

install_missing() {
  local want=()
  ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || want+=(postgresql)
  command -v mariadb-install-db >/dev/null || want+=(mariadb-server)
  command -v chromium >/dev/null || want+=(chromium)
  command -v npm >/dev/null || want+=(npm)
  command -v python3 >/dev/null || want+=(python3)
  # Debian's python3 makes virtual environments only with python3-venv.
  python3 -c 'import ensurepip' 2>/dev/null || want+=(python3-venv)
  command -v promtool >/dev/null || want+=(prometheus)
  [ ${#want[@]} -gt 0 ] || return 0
  local as_root=()
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
      echo "scripts/test: missing ${want[*]}; install them (apt-get install ${want[*]}) to run every test" >&2
      return 0
    fi
    as_root=(sudo -n)
  fi
  if ! command -v apt-get >/dev/null; then
    echo "scripts/test: missing ${want[*]}, and no apt-get to install them with: install them to run every test" >&2
    return 0
  fi
  echo "scripts/test: installing ${want[*]} (once)" >&2
  "${as_root[@]}" apt-get update -qq >/dev/null 2>&1 || true
  local p
  for p in "${want[@]}"; do # one at a time: one that is not there does not keep the others out
    # Once more after finishing what an earlier package left half-configured
    # (a server's post-install that could not start it, say): that would
    # otherwise refuse every install after it.
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
      { DEBIAN_FRONTEND=noninteractive "${as_root[@]}" dpkg --configure -a >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1; } ||
      echo "scripts/test: $p could not be installed: the tests that need it are skipped" >&2
  done
}
