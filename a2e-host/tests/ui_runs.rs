//! The live view's JSON of one run as the page reads it: a map's items
//! counted on their template node, and the timeline of node attempts with
//! their start and end times.

#![cfg(feature = "ui")]

use crate::net_support;

use a2e_client::Client;
use a2e_host::transport::net::NetOptions;
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use net_support::*;
use serde_json::{Value, json};

const TOKEN: &str = "s3cret";

/// `GET path` with the bearer token, as JSON.
async fn get_json(addr: std::net::SocketAddr, path: &str) -> Value {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get(path)
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap()
}

/// `list` echoes three items; the map `each` runs its template `one` on
/// each of them; `after` echoes.
fn map_chain() -> ChainRequest {
    let mut list = ChainNode::new("list", NodeKind::TOOL, "echo");
    list.input.insert("items".into(), json!([1, 2, 3]));
    list.next_node = "each".into();
    let mut each = ChainNode::new("each", NodeKind::MAP, "");
    each.items_path = "list.output.items".into();
    each.map_node = "one".into();
    each.next_node = "after".into();
    let mut one = ChainNode::new("one", NodeKind::TOOL, "echo");
    one.input_map.insert("n".into(), "item".into());
    let after = ChainNode::new("after", NodeKind::TOOL, "echo");
    ChainRequest {
        chain_id: "items".into(),
        nodes: vec![list, each, one, after],
        entry_node: "list".into(),
        ..ChainRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_json_counts_map_items_on_their_template_and_has_a_timeline() {
    let (_dir, _counters, host) = setup(TOKEN);
    a2e_host::runs::enable(&host).await.unwrap();
    let server = Server::start(host.clone(), NetOptions::default()).await;
    let client = Client::builder()
        .agent_id("items-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let resp = client.chains().run_to_end(map_chain()).await.unwrap();
    assert!(resp.success, "{resp:?}");
    let overview = get_json(server.addr, "/ui/api/overview").await;
    let run_id = overview["runs"][0]["run_id"].as_str().unwrap().to_owned();
    let run = get_json(server.addr, &format!("/ui/api/runs/{run_id}")).await;

    // The template ran once per item: done, with its items counted.
    let one = &run["states"]["one"];
    assert_eq!(one["state"], "done", "{run}");
    assert_eq!(
        one["items"],
        json!({"total": 3, "done": 3, "failed": 0, "running": 0, "skipped": 0})
    );
    for i in 0..3 {
        assert_eq!(run["states"][format!("one[{i}]")]["state"], "done");
    }

    // The timeline: each attempt with its start and end, in start order,
    // within the run's own start and end.
    let timeline = run["timeline"].as_array().unwrap();
    let ids: Vec<&str> = timeline
        .iter()
        .map(|t| t["node_id"].as_str().unwrap())
        .collect();
    for id in ["list", "one[0]", "one[1]", "one[2]", "after"] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    // Times are in milliseconds: a quick node may share one with the next.
    let at = |id: &str, key: &str| {
        timeline.iter().find(|t| t["node_id"] == id).unwrap()[key]
            .as_u64()
            .unwrap()
    };
    for i in 0..3 {
        let item = format!("one[{i}]");
        assert!(
            at("list", "end_ms") <= at(&item, "start_ms"),
            "{timeline:?}"
        );
        assert!(
            at(&item, "end_ms") <= at("after", "start_ms"),
            "{timeline:?}"
        );
    }
    let created = run["summary"]["created_ms"].as_u64().unwrap();
    let finished = run["summary"]["finished_ms"].as_u64().unwrap();
    let mut last_start = 0;
    for t in timeline {
        let (start, end) = (
            t["start_ms"].as_u64().unwrap(),
            t["end_ms"].as_u64().unwrap(),
        );
        assert!(created <= start && start <= end && end <= finished, "{t}");
        assert!(start >= last_start, "start order: {timeline:?}");
        last_start = start;
        assert_eq!(t["state"], "done");
        assert_eq!(t["attempt"], 1);
    }
    client.close().await;
    server.shutdown().await;
}
