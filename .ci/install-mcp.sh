#!/usr/bin/env bash
# a2e-mcp's test packages: a real MCP server from PyPI (mcp-server-time), the official
# Python MCP SDK (mcp: its ClientSession drives the server side), and the MCP reference
# test server from npm (@modelcontextprotocol/server-everything).
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

MCP_PY_VERSION="2.3.0"
MCP_TIME_VERSION="2026.10.19"
EVERYTHING_VERSION="2026.8.31"

# Python: a virtual environment of its own, so the versions are the pinned ones.
venv="$A2E_CI_TOOLS/mcp-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
want_py="mcp==$MCP_PY_VERSION mcp-server-time==$MCP_TIME_VERSION"
have_py="$("$venv/bin/python" -m pip freeze 2>/dev/null | grep -iE '^(mcp|mcp-server-time)==' | sort | tr '\n' ' ' || true)"
if [ "$have_py" != "mcp==$MCP_PY_VERSION mcp-server-time==$MCP_TIME_VERSION " ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want_py
fi

# npm: the reference server, under node/.
node_dir="$A2E_CI_TOOLS/node"
pkg_json="$node_dir/node_modules/@modelcontextprotocol/server-everything/package.json"
if [ ! -f "$pkg_json" ] || ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg_json"; then
  npm install --silent --no-audit --no-fund --prefix "$node_dir" \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi
