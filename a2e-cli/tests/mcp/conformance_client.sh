#!/usr/bin/env bash
# The MCP conformance suite's client under test: a2e mounting the suite's server.
# The suite runs this with the server's URL as the last argument, the scenario in
# MCP_CONFORMANCE_SCENARIO and, for some, a JSON context in MCP_CONFORMANCE_CONTEXT;
# A2E_BIN is the a2e binary. a2e does all the MCP and OAuth work (`a2e mcp login`,
# `a2e mcp tools`, `a2e mcp call`); this script only writes the server's config and
# picks what to call. The "browser" of the OAuth consent is curl: the suite's
# authorization server redirects at once, to a2e's loopback redirect listener.
set -euo pipefail
url="${!#}"
a2e="${A2E_BIN:?A2E_BIN must name the a2e binary}"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/browser.sh" <<'SH'
#!/bin/sh
exec curl -s -o /dev/null -L --max-redirs 5 "$1"
SH
chmod +x "$dir/browser.sh"
ctx() { # a field of the scenario's context
  python3 -c 'import json,os,sys; print(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get(sys.argv[1], ""))' "$1"
}
{
  echo "root = \"$dir\""
  echo
  echo "[[mcp.servers]]"
  echo "name = \"suite\""
  echo "url = \"$url\""
  echo "elicitation = \"defaults\""
  case "$scenario" in
    auth/*)
      echo "[mcp.servers.oauth]"
      case "$scenario" in
        auth/client-credentials-jwt)
          echo "grant = \"client_credentials\""
          echo "client_auth = \"private_key_jwt\""
          echo "private_key_env = \"SUITE_PRIVATE_KEY\""
          ;;
        auth/client-credentials-*) echo "grant = \"client_credentials\"" ;;
        auth/wif-*)
          echo "grant = \"jwt_bearer\""
          echo "assertion_env = \"SUITE_WORKLOAD_JWT\""
          ;;
        auth/enterprise-*) echo "grant = \"enterprise\"" ;;
      esac
      echo "client_metadata_url = \"https://conformance-test.local/client-metadata.json\""
      if [ -n "$(ctx client_id)" ]; then
        echo "client_id = \"$(ctx client_id)\""
      fi
      if [ -n "$(ctx client_secret)" ]; then
        echo "client_secret_env = \"SUITE_CLIENT_SECRET\""
      fi
      if [ -n "$(ctx idp_issuer)" ]; then
        echo "[mcp.servers.oauth.idp]"
        echo "issuer = \"$(ctx idp_issuer)\""
        echo "token_endpoint = \"$(ctx idp_token_endpoint)\""
        echo "client_id = \"$(ctx idp_client_id)\""
        echo "id_token_env = \"SUITE_ID_TOKEN\""
      fi
      ;;
  esac
} >"$dir/a2e.toml"
export SUITE_CLIENT_SECRET="$(ctx client_secret)"
export SUITE_PRIVATE_KEY="$(ctx private_key_pem)"
export SUITE_WORKLOAD_JWT="$(ctx valid_jwt)"
export SUITE_ID_TOKEN="$(ctx idp_id_token)"
run() { "$a2e" --config "$dir/a2e.toml" mcp "$@"; }
case "$scenario" in
  tools_call) run call suite add_numbers --input '{"a": 5, "b": 3}' ;;
  sse-retry) run call suite test_reconnection ;;
  elicitation-sep1034-client-defaults) run call suite test_client_elicitation_defaults ;;
  sep-2322-client-request-state)
    for tool in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
      run call suite "$tool"
    done
    ;;
  auth/*)
    BROWSER="$dir/browser.sh" run login suite
    BROWSER="$dir/browser.sh" run tools suite
    BROWSER="$dir/browser.sh" run call suite test-tool
    ;;
  json-schema-2020-12-preservation)
    # The focal tool's input schema as a2e holds it, sent back through the echo tool.
    schema="$(run tools suite --json | python3 -c 'import json,sys; print(next(json.dumps(t["inputSchema"]) for t in map(json.loads, sys.stdin) if t["name"] == "json_schema_2020_12_tool"))')"
    run call suite json_schema_echo --input "{\"schema\": $schema}"
    ;;
  http-invalid-tool-headers)
    # The valid tool is called; the ones with a malformed x-mcp-header must not be.
    run call suite valid_tool --input '{"region": "us-west1"}'
    for tool in invalid_empty_header invalid_object_header invalid_array_header; do
      run call suite "$tool" --input '{}' || true
    done
    ;;
  *)
    # A scenario that names calls in its context gets them, in order.
    calls="$(python3 -c 'import json,os; [print(json.dumps([c["name"], c.get("arguments", {})])) for c in json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get("toolCalls", [])]')"
    if [ -z "$calls" ]; then
      run tools suite
    fi
    while IFS= read -r call; do
      [ -n "$call" ] || continue
      name="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0])' "$call")"
      input="$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])[1]))' "$call")"
      run call suite "$name" --input "$input"
    done <<<"$calls"
    ;;
esac
