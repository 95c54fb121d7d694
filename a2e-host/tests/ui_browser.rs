//! The live view in a real browser: Debian's `chromium`, headless, driven
//! over the DevTools protocol (a WebSocket of JSON commands, spoken here
//! directly). The test opens `/ui` with the token, starts a chain over
//! WebSocket, watches its nodes turn `done` in the page's DOM within a
//! bounded time, opens a node's detail (what a node was called with, its
//! credential redacted; its trace and span id, telemetry being on), checks
//! that markup in a node's
//! output and in the chain's id stays text (and no dialog opened), filters
//! the event log, and takes a screenshot that is not blank.
//!
//! Without chromium the test prints `SKIPPED: …` and passes, except when
//! env `CI` is set (`.ci/install-chromium.sh` installs it). `A2E_CHROMIUM`
//! names another binary.
#![cfg(feature = "ui")]

mod net_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use a2e_client::Client;
use a2e_host::transport::net::NetOptions;
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use a2e_telemetry::{Exporter, OtlpProtocol, TelemetryConfig};
use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use net_support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_tungstenite::tungstenite::Message as WsMessage;

const TOKEN: &str = "s3cret";
const MARKUP: &str = "<img src=x onerror=alert(1)>";
const SECRET: &str = "sk-live-never-shown";

/// The browser binary: `A2E_CHROMIUM`, else `chromium` (or a Chrome) on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("A2E_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// A headless browser in its own process group, killed with it when dropped.
struct Browser {
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let group = nix::unistd::Pid::from_raw(pid as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Starts the browser; returns it and its DevTools WebSocket address.
async fn launch(binary: &PathBuf) -> (Browser, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(binary)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-port=0",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let browser = Browser {
        child,
        _profile: profile,
    };
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.split("DevTools listening on ").nth(1) {
                return url.trim().to_owned();
            }
        }
        panic!("the browser exited without a DevTools address");
    })
    .await
    .expect("the browser starts within 30 s");
    // The rest of its stderr is read and dropped (a full pipe would stall it).
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (browser, url)
}

/// A DevTools connection: commands answered in order, events noted by name.
struct Cdp {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next: u64,
    events: Vec<String>,
}

impl Cdp {
    async fn connect(url: &str) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Self {
            ws,
            next: 0,
            events: Vec::new(),
        }
    }

    /// Sends `method` (to the page `session`, when given) and returns its result.
    async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            msg["sessionId"] = json!(session);
        }
        self.ws
            .send(WsMessage::Text(msg.to_string().into()))
            .await
            .unwrap();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(30), self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within 30 s"))
                .expect("the DevTools connection stays open")
                .unwrap();
            let WsMessage::Text(text) = frame else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            if let Some(event) = v["method"].as_str() {
                self.events.push(event.to_owned());
            }
        }
    }

    /// A new tab at `url`, attached: its session id.
    async fn open(&mut self, url: &str) -> String {
        let target = self
            .call(None, "Target.createTarget", json!({"url": url}))
            .await;
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        attached["sessionId"].as_str().unwrap().to_owned()
    }

    /// The value of `expr` in the page (a promise is awaited).
    async fn eval(&mut self, session: &str, expr: &str) -> Value {
        let result = self
            .call(
                Some(session),
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expr}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expr` is true in the page, failing after `limit`.
    async fn wait_for(&mut self, session: &str, expr: &str, limit: Duration) {
        let start = Instant::now();
        while self.eval(session, expr).await != json!(true) {
            assert!(start.elapsed() < limit, "not true within {limit:?}: {expr}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `fetch` echoes markup, `wait` sleeps `wait_ms`, `last` echoes; the
/// chain's id is markup too.
fn chain(wait_ms: u64) -> ChainRequest {
    let mut fetch = ChainNode::new("fetch", NodeKind::TOOL, "echo");
    fetch.input.insert("html".into(), json!(MARKUP));
    fetch.next_node = "wait".into();
    let mut wait = ChainNode::new("wait", NodeKind::TOOL, "slow");
    wait.input.insert("ms".into(), json!(wait_ms));
    wait.next_node = "last".into();
    // `last` is called with what `wait` answered (resolved from its
    // `input_map`) and a credential, which is never shown.
    let mut last = ChainNode::new("last", NodeKind::TOOL, "echo");
    last.input_map
        .insert("slept".into(), json!("wait.output.slept"));
    last.input.insert("api_key".into(), json!(SECRET));
    ChainRequest {
        chain_id: "<b>digest</b>".into(),
        nodes: vec![fetch, wait, last],
        entry_node: "fetch".into(),
        streaming: true,
        ..ChainRequest::default()
    }
}

/// How many different colours a PNG (base64) shows, sampled, counted by a
/// canvas in a blank tab of the browser.
async fn colours(cdp: &mut Cdp, png: &str) -> Value {
    let tab = cdp.open("about:blank").await;
    let expr = format!(
        "new Promise((ok, fail) => {{ const i = new Image(); i.onerror = fail; \
         i.onload = () => {{ const c = document.createElement('canvas'); c.width = i.width; \
         c.height = i.height; const x = c.getContext('2d'); x.drawImage(i, 0, 0); \
         const d = x.getImageData(0, 0, c.width, c.height).data; const seen = new Set(); \
         for (let k = 0; k < d.length; k += 4 * 7) seen.add((d[k] << 16) | (d[k + 1] << 8) | d[k + 2]); \
         ok({{width: i.width, height: i.height, colours: seen.size}}); }}; \
         i.src = 'data:image/png;base64,{png}'; }})"
    );
    cdp.eval(&tab, &expr).await
}

const NODE_STATES: &str = "JSON.stringify(Object.fromEntries([...document.querySelectorAll('#graph g.node')]\
    .map(g => [g.getAttribute('data-node-id'), g.getAttribute('data-state')])))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_in_a_headless_browser() {
    let Some(binary) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing (.ci/install-chromium.sh installs it)"
        );
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
        return;
    };
    let started = Instant::now();
    // Telemetry on (spans recorded; exported to a closed loopback port,
    // which drops them): a node's detail shows its call's own span.
    let (telemetry, _telemetry_guard) = a2e_telemetry::Telemetry::init(&TelemetryConfig {
        enabled: true,
        endpoint: Some("http://127.0.0.1:9".into()),
        protocol: OtlpProtocol::HttpProtobuf,
        traces_exporter: Exporter::Otlp,
        metrics_exporter: Exporter::None,
        ..TelemetryConfig::default()
    })
    .unwrap();
    {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .try_init()
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let host = traced_host(dir.path(), TOKEN, Default::default(), telemetry);
    a2e_host::runs::enable(&host).await.unwrap();
    let server = Server::start(host, NetOptions::default()).await;
    let (browser, devtools) = launch(&binary).await;
    let mut cdp = Cdp::connect(&devtools).await;
    let page = cdp.open("about:blank").await;
    cdp.call(Some(&page), "Page.enable", json!({})).await;
    let url = format!("http://{}/ui?token={TOKEN}", server.addr);
    cdp.call(Some(&page), "Page.navigate", json!({"url": url}))
        .await;
    // The redirect dropped the token; the page's event stream is up.
    let live = "document.location.pathname === '/ui' && document.location.search === '' \
                && document.getElementById('conn')?.textContent === 'live'";
    cdp.wait_for(&page, live, Duration::from_secs(20)).await;

    let client = Client::builder()
        .agent_id("browser-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let sessions =
        "document.querySelector('#sessions tbody').textContent.includes('browser-agent')";
    cdp.wait_for(&page, sessions, Duration::from_secs(10)).await;

    // A chain over WebSocket: its nodes turn running, then done, in the DOM.
    let watched = Instant::now();
    let run = tokio::spawn(async move {
        let resp = client.chains().run_to_end(chain(1200)).await.unwrap();
        (client, resp)
    });
    let mut saw_running = false;
    loop {
        let states: Value =
            serde_json::from_str(cdp.eval(&page, NODE_STATES).await.as_str().unwrap()).unwrap();
        saw_running |= states["wait"] == "running";
        if ["fetch", "wait", "last"]
            .iter()
            .all(|n| states[*n] == "done")
        {
            break;
        }
        assert!(
            watched.elapsed() < Duration::from_secs(20),
            "the nodes did not all turn done within 20 s: {states}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let to_done = watched.elapsed();
    assert!(saw_running, "the slow node was seen running before done");
    let (client, resp) = run.await.unwrap();
    assert!(resp.success, "{resp:?}");

    // A node's detail: its output, markup shown as text.
    cdp.eval(
        &page,
        "document.querySelector('#graph g.node[data-node-id=\"fetch\"]')\
         .dispatchEvent(new MouseEvent('click', {bubbles: true})); true",
    )
    .await;
    cdp.wait_for(
        &page,
        "!document.getElementById('detail').hidden && \
         document.getElementById('detail-id').textContent === 'fetch'",
        Duration::from_secs(5),
    )
    .await;
    let detail = cdp
        .eval(
            &page,
            "document.getElementById('detail-fields').textContent",
        )
        .await;
    let detail = detail.as_str().unwrap();
    assert!(detail.contains(MARKUP), "{detail}");
    assert!(
        detail.contains("done") && detail.contains("attempts1"),
        "{detail}"
    );
    let title = cdp
        .eval(&page, "document.getElementById('run-title').textContent")
        .await;
    assert!(
        title.as_str().unwrap().starts_with("<b>digest</b>"),
        "{title}"
    );
    // The detail of `last`: the input it was called with, resolved from its
    // `input_map` (what `wait` answered), its credential redacted.
    cdp.eval(
        &page,
        "document.querySelector('#graph g.node[data-node-id=\"last\"]')\
         .dispatchEvent(new MouseEvent('click', {bubbles: true})); true",
    )
    .await;
    cdp.wait_for(
        &page,
        "document.getElementById('detail-id').textContent === 'last'",
        Duration::from_secs(5),
    )
    .await;
    let called = cdp
        .eval(
            &page,
            "(() => { const dt = [...document.querySelectorAll('#detail-fields dt')]\
             .find(d => d.textContent === 'called with'); \
             return dt ? dt.nextElementSibling.textContent : null; })()",
        )
        .await;
    let called: Value = serde_json::from_str(called.as_str().expect("a `called with` row"))
        .expect("the resolved input, as JSON");
    assert_eq!(called["slept"], json!(1200), "{called}");
    assert_eq!(called["api_key"], json!("[REDACTED]"), "{called}");
    // Nor in the node as defined (its echoed output is the tool's own).
    let defined = cdp
        .eval(
            &page,
            "[...document.querySelectorAll('#detail-fields dt')]\
             .filter(d => d.textContent !== 'output')\
             .map(d => d.nextElementSibling.textContent).join(' ')",
        )
        .await;
    let defined = defined.as_str().unwrap();
    assert!(
        defined.contains("[REDACTED]") && !defined.contains(SECRET),
        "{defined}"
    );
    // Its trace, and its call's own span (telemetry is on).
    let ids = cdp
        .eval(
            &page,
            "Object.fromEntries([...document.querySelectorAll('#detail-fields dt')]\
             .map(d => [d.textContent, d.nextElementSibling.textContent]))",
        )
        .await;
    let hex = |v: &Value, len: usize| {
        v.as_str()
            .is_some_and(|s| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    assert!(hex(&ids["trace id"], 32), "{ids}");
    assert!(hex(&ids["span id"], 16), "{ids}");

    // No element came from the data: no image, no bold, one script.
    let made = cdp
        .eval(
            &page,
            "[document.images.length, document.querySelectorAll('b').length, document.scripts.length]",
        )
        .await;
    assert_eq!(made, json!([0, 0, 1]));

    // The event log, filtered by kind.
    cdp.eval(
        &page,
        "const k = document.getElementById('log-kind'); k.value = 'run_finished'; \
         k.dispatchEvent(new Event('input')); true",
    )
    .await;
    let rows = cdp
        .eval(&page, "document.querySelector('#log tbody').rows.length")
        .await;
    assert_eq!(rows, json!(1));
    let catalog = "document.getElementById('catalog').textContent.includes('echo')";
    cdp.wait_for(&page, catalog, Duration::from_secs(5)).await;

    // A screenshot that is not blank.
    let shot = cdp
        .call(
            Some(&page),
            "Page.captureScreenshot",
            json!({"format": "png"}),
        )
        .await;
    let png = shot["data"].as_str().unwrap().to_owned();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&png)
        .unwrap();
    assert!(bytes.starts_with(b"\x89PNG"));
    let _ = std::fs::write(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-live-view.png"),
        &bytes,
    );
    let seen = colours(&mut cdp, &png).await;
    assert!(seen["width"].as_u64().unwrap() >= 800, "{seen}");
    assert!(
        seen["colours"].as_u64().unwrap() >= 8,
        "a blank screenshot: {seen}"
    );

    assert!(
        !cdp.events
            .iter()
            .any(|e| e == "Page.javascriptDialogOpening"),
        "no dialog opened"
    );
    drop(cdp);
    drop(browser);
    client.close().await;
    server.shutdown().await;
    eprintln!(
        "browser test: nodes done in the DOM {} ms after the chain started; {} ms in all",
        to_done.as_millis(),
        started.elapsed().as_millis()
    );
}

/// A call held back for approval is approved with two clicks (approve,
/// then its confirmation), through the page's own CSRF-checked `POST`.
#[tokio::test]
async fn a_waiting_call_is_approved_with_a_click() {
    let Some(binary) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing (.ci/install-chromium.sh installs it)"
        );
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = a2e_host::HostConfig {
        root: dir.path().to_owned(),
        auth_token: TOKEN.to_owned(),
        ..a2e_host::HostConfig::default()
    };
    config.approvals = a2e_host::HostConfig::from_toml("[[approvals]]\ntool = \"echo\"\n")
        .unwrap()
        .approvals;
    let layer = a2e_host::approvals::ApprovalLayer::from_config(&config).unwrap();
    let host = a2e_host::Host::builder(config)
        .with_builtins()
        .with_tool_plugin(TestTools(Default::default()))
        .with_layer(layer)
        .build()
        .unwrap();
    a2e_host::runs::enable(&host).await.unwrap();
    let server = Server::start(host, NetOptions::default()).await;
    let (browser, devtools) = launch(&binary).await;
    let mut cdp = Cdp::connect(&devtools).await;
    let page = cdp.open("about:blank").await;
    cdp.call(Some(&page), "Page.enable", json!({})).await;
    let url = format!("http://{}/ui?token={TOKEN}", server.addr);
    cdp.call(Some(&page), "Page.navigate", json!({"url": url}))
        .await;
    let live = "document.getElementById('conn')?.textContent === 'live'";
    cdp.wait_for(&page, live, Duration::from_secs(20)).await;

    let client = Client::builder()
        .agent_id("clicking-agent")
        .auth_token(TOKEN)
        .connect_ws(&server.ws_url())
        .await
        .unwrap();
    let call = tokio::spawn(async move {
        let done = client.tools().call("echo", json!({"y": 7})).await;
        (client, done)
    });
    let listed = "document.querySelector('#waiting li button.approve') !== null \
                  && document.querySelector('#waiting li pre').textContent.includes('\"y\": 7')";
    cdp.wait_for(&page, listed, Duration::from_secs(20)).await;
    let run = cdp
        .eval(&page, "document.querySelector('#waiting li').dataset.run")
        .await;
    let approve = format!("/ui/api/runs/{}/approve", run.as_str().unwrap());
    // From the page's own origin but without its CSRF token: refused.
    let bare = format!(
        "fetch('{approve}', {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, \
         body: '{{}}'}}).then(r => r.status)"
    );
    assert_eq!(cdp.eval(&page, &bare).await, json!(403));
    // From another origin (`localhost` is not `127.0.0.1`): refused, or not
    // even sent by the browser.
    let elsewhere = cdp.open("about:blank").await;
    let other = format!("http://localhost:{}/ui/app.css", server.addr.port());
    cdp.call(Some(&elsewhere), "Page.navigate", json!({"url": other}))
        .await;
    let loaded = "document.location.hostname === 'localhost'";
    cdp.wait_for(&elsewhere, loaded, Duration::from_secs(10))
        .await;
    let cross = format!(
        "fetch('http://{}{approve}', {{method: 'POST', mode: 'no-cors', credentials: 'include', \
         body: '{{}}'}}).then(r => r.type, e => 'blocked')",
        server.addr
    );
    let sent = cdp.eval(&elsewhere, &cross).await;
    assert!(
        sent == json!("opaque") || sent == json!("blocked"),
        "{sent}"
    );
    assert!(!call.is_finished(), "a refused POST decides nothing");
    cdp.eval(
        &page,
        "document.querySelector('#waiting li button.approve').click(); true",
    )
    .await;
    let confirm = "document.querySelector('#waiting li .confirm-yes') !== null";
    cdp.wait_for(&page, confirm, Duration::from_secs(5)).await;
    assert!(
        !call.is_finished(),
        "nothing is decided before the confirmation"
    );
    cdp.eval(
        &page,
        "document.querySelector('#waiting li .confirm-yes').click(); true",
    )
    .await;
    let (client, done) = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call ends once approved")
        .unwrap();
    let done = done.unwrap();
    assert!(done.success, "{done:?}");
    assert_eq!(done.data, json!({"y": 7}));
    let cleared = "document.querySelectorAll('#waiting li').length === 0";
    cdp.wait_for(&page, cleared, Duration::from_secs(20)).await;
    drop(cdp);
    drop(browser);
    client.close().await;
    server.shutdown().await;
}
