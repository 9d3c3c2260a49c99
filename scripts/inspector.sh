# Sourced by scripts/test: installs the MCP Inspector's CLI from npm into a
# cache directory once, and names it in HECTOR_TEST_MCP_INSPECTOR for the
# test that drives Hector's MCP server with a third-party client. Without
# npm, or without the registry, that test is skipped, and this says so.

INSPECTOR_VERSION=2.12.0

install_inspector() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/hector/inspector-$INSPECTOR_VERSION"
  local bin="$dir/node_modules/.bin/mcp-inspector"
  if [ ! -x "$bin" ]; then
    if ! command -v npm >/dev/null; then
      echo "scripts/test: npm is not installed: the MCP Inspector test is skipped" >&2
      return 0
    fi
    echo "scripts/test: installing the MCP Inspector $INSPECTOR_VERSION from npm (once)" >&2
    mkdir -p "$dir"
    if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null 2>&1; then
      echo "scripts/test: the MCP Inspector could not be installed from npm: its test is skipped" >&2
      return 0
    fi
  fi
  export HECTOR_TEST_MCP_INSPECTOR="$bin"
}
