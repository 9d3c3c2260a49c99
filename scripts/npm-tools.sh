# Sourced by scripts/test: installs, once, into a cache directory, the npm
# tools some tests drive: the MCP Inspector's CLI (a third-party MCP
# client), openapi-typescript and tsc (the generated TypeScript types),
# redocly (the OpenAPI document's lint).
# It exports HECTOR_TEST_MCP_INSPECTOR and HECTOR_TEST_NODE_BIN. Without npm
# or the registry, those tests are skipped, and this says so.

npm_tools="@modelcontextprotocol/inspector@2.12.0 openapi-typescript@7.13.0 typescript@5.9.3 @redocly/cli@2.77.0"

install_npm_tools() {
  local dir="${HECTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hector}/npm-tools-$(echo "$npm_tools" | cksum | cut -d' ' -f1)"
  local bin="$dir/node_modules/.bin"
  if [ ! -x "$bin/tsc" ]; then
    if ! command -v npm >/dev/null; then
      echo "scripts/test: npm is not installed: the MCP Inspector and TypeScript client tests are skipped" >&2
      return 0
    fi
    echo "scripts/test: installing from npm (once): $npm_tools" >&2
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $npm_tools >/dev/null 2>&1; then
      echo "scripts/test: the npm tools could not be installed: the MCP Inspector and TypeScript client tests are skipped" >&2
      return 0
    fi
  fi
  export HECTOR_TEST_MCP_INSPECTOR="$bin/mcp-inspector" HECTOR_TEST_NODE_BIN="$bin"
}
