//! The dispatch's tests: the panic net, the first poll of a request, the
//! size of a request's future.

mod panic_net {
    use super::super::*;
    use a2e_host_core::outbound::Outbound;
    use a2e_host_core::{Host, HostConfig};

    #[tokio::test]
    async fn a_panicking_request_is_answered_once_and_audited_as_failed() {
        let host = Host::builder(HostConfig::default()).build().unwrap();
        let (tx, mut rx) = a2e_host_core::EventStream::channel(8);
        let session = Session::new(host, tx);
        let work = async {
            if session.id().is_empty() {
                return Audited::ok("never");
            }
            panic!("the work blew up")
        };
        let audited = guarded(&session, "r1", "tool/call/req", work).await;
        assert!(!audited.success);
        assert_eq!(audited.error_code, "runtime_error");
        let Some(Outbound::Message(Message::ErrorMessage(e))) = rx.recv().await else {
            panic!("no error message");
        };
        assert_eq!(e.req_id, "r1");
        assert_eq!(e.code, ErrorCode::RUNTIME_ERROR);
        assert!(e.message.contains("the work blew up"), "{}", e.message);
        assert!(rx.try_recv().is_none(), "exactly one answer");

        // Work that finishes is passed through untouched.
        let audited = guarded(&session, "r2", "ping", async { Audited::ok("fine") }).await;
        assert!(audited.success);
        assert_eq!(audited.name, "fine");
        assert!(rx.try_recv().is_none());
    }
}
mod first_poll {
    use serde_json::json;

    use super::super::*;
    use a2e_host_core::outbound::Outbound;
    use a2e_test_kit::plugin::{Named, Wakes};

    /// A chain answered inline then waits for its answer to be written, on
    /// a task of its own: the writer passing its mark wakes that task, not
    /// the reader's.
    #[tokio::test]
    async fn a_request_that_goes_on_to_its_own_task_leaves_no_waker_of_the_reader() {
        let host = a2e_host_core::Host::builder(a2e_host_core::HostConfig::default())
            .with_tool_plugin(Named)
            .build()
            .unwrap();
        let (tx, mut rx) = a2e_host_core::EventStream::channel(8);
        let session = Session::new(host, tx);
        let line = json!({
            "type": "chain/req", "id": "c1", "version": "1.0", "entry_node": "n0",
            "streaming": false,
            "nodes": [{"node_id": "n0", "kind": "tool", "name": "a", "input": {"x": 1}}],
        });
        let request = a2e_proto::decode(line.to_string().as_bytes()).unwrap();
        let (wakes, waker) = Wakes::waker();
        let mut reader = std::task::Context::from_waker(&waker);
        let mut handled = std::pin::pin!(spawn_request(&session, request));
        assert!(handled.as_mut().poll(&mut reader).is_ready());
        let Some(Outbound::Message(Message::ChainResponse(resp))) = rx.recv().await else {
            panic!("no answer");
        };
        assert!(resp.success, "{:?}", resp.error);
        let Some(Outbound::Mark(mark)) = rx.recv().await else {
            panic!("no mark after the answer");
        };
        // The writer is past the answer: the chain's task frees its plan.
        drop(mark);
        session.tasks.close();
        session.tasks.wait().await;
        assert_eq!(wakes.count(), 0, "the reader was woken");
    }
}

mod future_size {
    use super::super::*;

    /// Every request's future is as large as the largest arm of
    /// `run_request`, and is moved (copied) a few times on its way to its
    /// task: the large arms (chains, skills, procs, listings) are boxed,
    /// and the panic net keeps the work once.
    #[tokio::test]
    async fn a_requests_future_stays_small() {
        let host = a2e_host_core::Host::builder(a2e_host_core::HostConfig::default())
            .build()
            .unwrap();
        let (tx, _rx) = a2e_host_core::EventStream::channel(8);
        let session = Session::new(host, tx);
        let msg = Message::Ping(a2e_proto::Ping::default());
        let run = std::mem::size_of_val(&run_request(&session, msg.clone()));
        let net = std::mem::size_of_val(&guarded(
            &session,
            "",
            "",
            run_request(&session, msg.clone()),
        ));
        let permit = session.queue.clone().acquire_owned().await.unwrap();
        let task = std::mem::size_of_val(&request_task(session.clone(), msg, permit));
        assert!(
            net <= run + 256,
            "the panic net holds the work twice: {net} for {run}"
        );
        assert!(task <= 8 * 1024, "a request's future is {task} bytes");
    }
}

mod extensions {
    use serde_json::json;

    use super::super::*;
    use a2e_host_core::outbound::Outbound;

    /// The next message the session sends that is not a mark.
    async fn next(rx: &mut a2e_host_core::outbound::EventReceiver) -> Message {
        loop {
            match rx.recv().await {
                Some(Outbound::Message(msg)) => return msg,
                Some(_) => {}
                None => panic!("the session sent nothing"),
            }
        }
    }

    fn line(value: serde_json::Value) -> Message {
        a2e_proto::decode(value.to_string().as_bytes()).unwrap()
    }

    /// `chain/attach` and `dag/req` are admitted as every request (a
    /// handshake, the `chains` capability) and reach their handlers.
    #[tokio::test]
    async fn attach_and_dag_requests_are_admitted_as_every_request() {
        let host = a2e_host_core::Host::builder(a2e_host_core::HostConfig::default())
            .build()
            .unwrap();
        let (tx, mut rx) = a2e_host_core::EventStream::channel(8);
        let session = Session::new(host, tx);
        let attach = json!({"type": "chain/attach", "id": "a1", "run_id": "r"});
        handle(&session, line(attach.clone())).await;
        let Message::ErrorMessage(e) = next(&mut rx).await else {
            panic!("no refusal")
        };
        assert_eq!(
            (e.req_id.as_str(), &e.code),
            ("a1", &ErrorCode::UNAUTHORIZED)
        );

        // Shaken hands without `chains`: refused naming the capability.
        let hello = json!({"type": "handshake/req", "id": "h1", "agent_id": "ag",
                           "agent_caps": ["tools"]});
        handle(&session, line(hello)).await;
        assert!(matches!(next(&mut rx).await, Message::HandshakeResponse(_)));
        let dag = json!({"type": "dag/req", "id": "d1", "dag": {"dag_id": "x"}});
        handle(&session, line(dag.clone())).await;
        let Message::ErrorMessage(e) = next(&mut rx).await else {
            panic!("no refusal")
        };
        assert_eq!(
            (e.code, e.capability_name.as_str()),
            (ErrorCode::UNAUTHORIZED, "chains")
        );

        // With `chains`: a host without a journal cannot attach; a DAG it
        // cannot read is a schema violation (or, built without ACMP DAGs
        // and the journal, unavailable).
        let hello = json!({"type": "handshake/req", "id": "h2", "agent_id": "ag",
                           "agent_caps": ["chains"]});
        handle(&session, line(hello)).await;
        assert!(matches!(next(&mut rx).await, Message::HandshakeResponse(_)));
        handle(&session, line(attach)).await;
        let Message::ErrorMessage(e) = next(&mut rx).await else {
            panic!("no refusal")
        };
        assert_eq!(
            (e.req_id.as_str(), &e.code),
            ("a1", &ErrorCode::UNAVAILABLE)
        );
        handle(&session, line(dag)).await;
        let Message::ErrorMessage(e) = next(&mut rx).await else {
            panic!("no refusal")
        };
        let expected = if cfg!(all(feature = "acmp", feature = "journal")) {
            ErrorCode::SCHEMA_VIOLATION
        } else {
            ErrorCode::UNAVAILABLE
        };
        assert_eq!((e.req_id.as_str(), e.code), ("d1", expected));
    }
}
