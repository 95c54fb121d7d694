//! The official MCP conformance suite against the host as an MCP client: the
//! suite starts its test servers and runs `tests/mcp/conformance_client.sh`,
//! in which a2e mounts each server (`a2e mcp tools | call`) and does the
//! MCP work. A failing scenario fails the test; every scenario's result is
//! printed.

use crate::mcp_conformance_support;

use std::path::Path;

use mcp_conformance_support::{Outcome, run, suite};

fn client_scenarios(test: &str, scenarios: &[&str]) {
    let Some((node, entry)) = suite(test) else {
        return;
    };
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance_client.sh");
    let driver = driver.to_str().unwrap();
    let mut all: Vec<Outcome> = Vec::new();
    let mut output = String::new();
    for scenario in scenarios {
        let (text, outcomes) = run(
            &node,
            &entry,
            &["client", "--command", driver, "--scenario", scenario],
            &[("A2E_BIN", env!("CARGO_BIN_EXE_a2e"))],
        );
        assert!(
            outcomes.iter().any(|o| o.scenario == *scenario),
            "scenario {scenario} did not run\n{text}"
        );
        output.push_str(&text);
        all.extend(outcomes);
    }
    let failed: Vec<&Outcome> = all
        .iter()
        .filter(|o| o.failed > 0 || o.passed == 0)
        .collect();
    assert!(failed.is_empty(), "failing scenarios: {failed:?}\n{output}");
}

#[test]
fn the_client_scenarios_pass_with_a2e_mounting_the_suites_servers() {
    client_scenarios(
        "the_client_scenarios_pass_with_a2e_mounting_the_suites_servers",
        &[
            "initialize",
            "tools_call",
            "sse-retry",
            "elicitation-sep1034-client-defaults",
        ],
    );
}

/// Every auth scenario of the 2025-11-25 and 2025-03-26 sets, those of the
/// draft set, and the client credentials extension with a client secret.
/// (`auth/client-credentials-jwt` is not among them: a `private_key_jwt`
/// assertion needs rmcp's JWT feature, which brings a second crypto stack,
/// aws-lc, into the build; nor is `auth/cross-app-access-complete-flow`,
/// enterprise-managed authorization, which a2e does not offer.)
#[test]
fn the_auth_scenarios_pass_with_a2e_authorizing_itself() {
    client_scenarios(
        "the_auth_scenarios_pass_with_a2e_authorizing_itself",
        &[
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/basic-cimd",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/pre-registration",
            "auth/2025-03-26-oauth-endpoint-fallback",
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
            "auth/client-credentials-basic",
        ],
    );
}
