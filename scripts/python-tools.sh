# Sourced by scripts/test: installs, once, into a virtual environment in a
# cache directory, the Python tools the Python client's tests use: pytest,
# mypy, setuptools and wheel to install the client as pip does, and the
# agent frameworks the integrations' tests drive. It
# exports HECTOR_TEST_PYTHON_TOOLS, the environment's bin directory.
# Without python3 or the package index, those tests are skipped, and this
# says so.

# The agent frameworks the integrations (the client's extras) are tested
# with, at the versions pyproject.toml's ranges name.
python_tools="pytest==9.2.0 mypy==2.4.1 setuptools==84.2.1 wheel==0.48.0 schemathesis==4.32.5
  google-adk==2.13.0 openai-agents==0.24.0 langgraph==1.2.24 langgraph-checkpoint==4.3.2
  langgraph-checkpoint-conformance==0.0.2 httpx==0.29.0"

install_python_tools() {
  local dir="${HECTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hector}/python-tools-$(echo "$python_tools" | cksum | cut -d' ' -f1)"
  if [ ! -x "$dir/bin/mypy" ]; then
    if ! command -v python3 >/dev/null; then
      echo "scripts/test: python3 is not installed: the Python client's pytest, mypy and install tests are skipped" >&2
      return 0
    fi
    echo "scripts/test: installing from the Python package index (once): $python_tools" >&2
    rm -rf "$dir"
    # shellcheck disable=SC2086
    if ! { python3 -m venv "$dir" && "$dir/bin/pip" install --quiet --disable-pip-version-check $python_tools; } >/dev/null 2>&1; then
      rm -rf "$dir"
      echo "scripts/test: the Python tools could not be installed: the Python client's pytest, mypy and install tests are skipped" >&2
      return 0
    fi
  fi
  export HECTOR_TEST_PYTHON_TOOLS="$dir/bin"
}
