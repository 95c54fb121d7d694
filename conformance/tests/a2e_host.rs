//! The `a2e` host passes the host suite over stdio, WebSocket and HTTP+SSE
//! (with the fixture profile of `fixture-host.toml`): nothing fails that is
//! not in `expected/a2e-host-<transport>.txt`, nothing is skipped.

use crate::support;

use conformance::host::Target;
use conformance::runner::Selection;

#[test]
fn the_a2e_host_passes_the_host_suite_over_stdio() {
    let Some(a2e) = support::a2e() else { return };
    let mut report = support::run_host(
        Target::Command(support::stdio_command(&a2e)),
        Some(support::TOKEN),
        &Selection::default(),
    );
    support::assert_clean(
        &mut report.results,
        &support::expected("a2e-host-stdio.txt"),
        200,
    );
}

#[test]
fn the_a2e_host_passes_the_host_suite_over_websocket() {
    let Some(a2e) = support::a2e() else { return };
    let server = support::Server::start(&a2e, "--ws");
    let mut report = support::run_host(
        Target::Url(server.url.clone()),
        Some(support::TOKEN),
        &Selection::default(),
    );
    support::assert_clean(
        &mut report.results,
        &support::expected("a2e-host-ws.txt"),
        200,
    );
}

#[test]
fn the_a2e_host_passes_the_host_suite_over_http_sse() {
    let Some(a2e) = support::a2e() else { return };
    let server = support::Server::start(&a2e, "--http");
    let mut report = support::run_host(
        Target::Url(server.url.clone()),
        Some(support::TOKEN),
        &Selection::default(),
    );
    support::assert_clean(
        &mut report.results,
        &support::expected("a2e-host-http.txt"),
        200,
    );
}

#[test]
fn the_fixture_plugin_alone_passes_what_a_tools_only_host_can() {
    // a2e-plugin's stdio host offers tools only: every scenario needing skills,
    // chains or processes is skipped, the rest passes but for its listed faults.
    let command = vec![support::me().display().to_string(), "fixture-plugin".into()];
    let mut report = support::run_host(Target::Command(command), None, &Selection::default());
    let tally =
        conformance::expected::tally(&mut report.results, &support::expected("a2e-plugin.txt"));
    let lines = support::failures(&report.results).join("\n");
    assert!(tally.ok(), "{tally:?}\n{lines}");
    assert!(tally.passed >= 80, "{tally:?}");
    assert!(report.fixtures.has(conformance::scenario::Fixture::Tool(
        conformance::profile::DEFERRED
    )));
}
