//! Each unavailable layer is logged once per process, never skipped silently.
//! (A file of its own: the "once" is per process.)

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use a2e_sandbox::{BubblewrapUse, Policy, SandboxConfig};
use common::sandbox_with;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn each_missing_layer_is_warned_about_once() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let config = SandboxConfig {
        namespaces: false,
        landlock: false,
        bubblewrap: BubblewrapUse::Never,
        force_user_namespace: false,
    };
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let sb = sandbox_with(config.clone()).await;
        // A skill policy asks for every layer the config took away.
        let _ = sb.applied(&Policy::skill(dir.path()));
    }
    let log = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    for layer in [
        "pid_namespace",
        "net_namespace",
        "landlock_fs",
        "landlock_tcp",
        "landlock_scope",
        "bubblewrap",
    ] {
        let needle = format!("sandbox layer `{layer}` is unavailable");
        assert_eq!(log.matches(&needle).count(), 1, "{layer}:\n{log}");
    }
    for per_run in [
        "descendants of sandboxed children are not contained",
        "sandboxed children keep the network",
        "sandboxed children keep the host's filesystem access",
    ] {
        assert_eq!(log.matches(per_run).count(), 1, "{per_run}:\n{log}");
    }
    assert!(log.contains("WARN"), "{log}");
}
