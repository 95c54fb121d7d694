#!/usr/bin/env bash
# The MCP conformance suite's client under test: a2e mounting the suite's server.
# The suite runs this with the server's URL as the last argument and the scenario in
# MCP_CONFORMANCE_SCENARIO; A2E_BIN is the a2e binary. a2e does all the MCP work
# (`a2e mcp login`, `a2e mcp tools`, `a2e mcp call`); this script only picks what to call.
set -euo pipefail
url="${!#}"
a2e="${A2E_BIN:?A2E_BIN must name the a2e binary}"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/a2e.toml" <<TOML
root = "$dir"

[[mcp.servers]]
name = "suite"
url = "$url"
elicitation = "defaults"
TOML
run() { "$a2e" --config "$dir/a2e.toml" mcp "$@"; }
case "$scenario" in
  tools_call) run call suite add_numbers --input '{"a": 5, "b": 3}' ;;
  sse-retry) run call suite test_reconnection ;;
  elicitation-sep1034-client-defaults) run call suite test_client_elicitation_defaults ;;
  *) run tools suite ;;
esac
