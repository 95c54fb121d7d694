//! a2e-client, driven by `a2e-conformance client-driver`, passes the client
//! suite over stdio, WebSocket and HTTP+SSE: nothing fails that is not in
//! `expected/a2e-client.txt`, nothing is skipped.

use crate::support;

use std::time::Duration;

use conformance::client::{ClientOptions, run_all};
use conformance::runner::Selection;
use conformance::scenario::Transport;

#[test]
fn a2e_client_passes_the_client_suite_on_every_transport() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let command = vec![support::me().display().to_string(), "client-driver".into()];
    let opts = ClientOptions {
        token: "conformance-client-token".into(),
        answer_timeout: Duration::from_secs(10),
        scenario_timeout: Duration::from_secs(60),
        stderr: false,
        me: support::me(),
    };
    let runs = rt.block_on(run_all(
        &command,
        Transport::ALL,
        &Selection::default(),
        &opts,
        Duration::from_secs(600),
        |_, _| {},
    ));
    rt.shutdown_background();
    assert_eq!(runs.len(), 3);
    let expected = support::expected("a2e-client.txt");
    for (transport, mut results) in runs {
        let tally = conformance::expected::tally(&mut results, &expected);
        let lines = support::failures(&results).join("\n");
        assert!(tally.ok(), "{transport}: {tally:?}\n{lines}");
        assert_eq!(tally.skipped, 0, "{transport}: {lines}");
        assert!(results.len() >= 50, "{transport}: {} checks", results.len());
    }
}
