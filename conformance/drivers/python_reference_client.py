#!/usr/bin/env python3
"""A client-suite driver for the Python reference client (`a2eprotocol/python-sdk`).

`a2e-conformance client -- python3 python_reference_client.py` starts this
script once per scenario as `python3 python_reference_client.py TARGET`, with
the scenario's short name in A2E_CONFORMANCE_SCENARIO, the transport in
A2E_CONFORMANCE_TRANSPORT and, where the scenario gives one, a token in
A2E_CONFORMANCE_AUTH_TOKEN. TARGET is an http:// URL, or for stdio the program
to start as the host. The SDK must be importable (its checkout on PYTHONPATH).

The script does what the scenario asks through the SDK's public client API
(`A2EClient`, the transports of `a2e.core.transports`, `ToolAPI`, `SkillAPI`,
`ChainsAPI`, `ProcsAPI`) and prints its report as the last line of stdout.
Where the SDK offers no way to do or see what a scenario asks, the report says
so in `error` rather than reaching into the SDK's private state.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time

# The SDK's client emits through `logging`; keep stdout for the report.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
LOG = logging.getLogger("conformance-driver")

# The whole run is bounded, as the suite's own driver is.
DRIVER_LIMIT_SECS = 120

_printed = threading.Lock()


def report(value: dict, code: int) -> None:
    """Prints the report as the last stdout line and ends the process."""
    with _printed:
        sys.stdout.write(json.dumps(value, default=str) + "\n")
        sys.stdout.flush()
        # Daemon threads of the SDK (readers, retries) must not keep us alive.
        os._exit(code)


def out_of_time() -> None:
    report({"error": "the driver ran out of time"}, 1)


class Unsupported(Exception):
    """The SDK's public API has no way to do or see what the scenario asks."""


def capability(scenario: str) -> str:
    return {"skills": "skill", "chain": "chains", "proc": "proc"}.get(scenario, "tools")


def make_client(scenario: str, target: str):
    from a2e.core.client.client import A2EClient
    from a2e.core.transports import HTTPTransport, SubprocessTransport

    transport_name = os.environ.get("A2E_CONFORMANCE_TRANSPORT", "")
    if target.startswith("ws://"):
        raise Unsupported("the SDK has no WebSocket transport")
    if target.startswith("http://"):
        transport = HTTPTransport(target, LOG)
    elif transport_name in ("", "stdio"):
        transport = SubprocessTransport([target], LOG)
    else:
        raise Unsupported(f"no transport for `{target}` ({transport_name})")
    return A2EClient(
        transport=transport,
        logger=LOG,
        agent_id="conformance-client",
        auth_token=os.environ.get("A2E_CONFORMANCE_AUTH_TOKEN", ""),
        agent_caps=[capability(scenario)],
    )


def event_fields(e) -> dict:
    return {"seq": e.seq, "kind": e.kind, "data": e.data}


def act(scenario: str, client) -> dict:
    from a2e.caps.chains.client import ChainsAPI
    from a2e.caps.proc.client import ProcsAPI
    from a2e.caps.skills.client import SkillAPI
    from a2e.caps.tools.client import ToolAPI
    from a2e.core.client.client import A2EClientError

    tools = ToolAPI(client)
    if scenario == "handshake":
        client.ping()
        # The handshake's session_id and max_parallel stay inside A2EClient:
        # it has no public accessor for either.
        raise Unsupported(
            "A2EClient exposes neither the session id nor max_parallel of handshake/resp"
        )
    if scenario in ("auth", "auth-bearer"):
        client.ping()
        return {}
    if scenario == "tools":
        listed = tools.list()
        r = tools.call("echo", {"text": "hello"})
        return {"tools": [t.name for t in listed], "result": r.data}
    if scenario == "streaming":
        events: list = []
        r = tools.call("stream", {}, streaming=True, on_event=lambda e: events.append(event_fields(e)))
        return {"events": events, "result": r.data}
    if scenario == "interleaved":
        got: dict = {}

        def run(name: str, n: int) -> None:
            events: list = []
            try:
                r = tools.call(name, {"n": n}, streaming=True, on_event=lambda e: events.append(e.data))
                got[name] = {"events": events, "result": r.data}
            except Exception as e:  # reported below
                got[name] = {"error": f"{type(e).__name__}: {e}"}

        threads = [threading.Thread(target=run, args=a) for a in (("slow", 1), ("fast", 2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return got
    if scenario == "refused":
        code = ""
        try:
            tools.call("missing", {})
        except A2EClientError as e:
            code = e.code
        after = tools.call("echo", {"text": "after"})
        return {"error_code": code, "after": after.data}
    if scenario == "failed":
        r = tools.call("flaky", {})
        return {"success": r.success, "error_code": r.error_code, "error": r.error}
    if scenario == "host-closes":
        try:
            r = tools.call("hang", {}, timeout=30)
        except Exception as e:
            return {"error": f"{type(e).__name__}: {e}"}
        raise RuntimeError(f"the call returned {r!r}")
    if scenario == "seq-gap":
        seqs: list = []
        r = tools.call("gappy", {}, streaming=True, on_event=lambda e: seqs.append(e.seq))
        return {"seqs": seqs, "result": r.data}
    if scenario == "large":
        r = tools.call("large", {})
        return {"length": len(r.data) if isinstance(r.data, str) else 0}
    if scenario in ("unknown", "unknown-answer", "host-ping"):
        text = {"unknown": "u", "unknown-answer": "v"}.get(scenario, "p")
        r = tools.call("echo", {"text": text})
        return {"result": r.data}
    if scenario == "skills":
        skills = SkillAPI(client)
        found = skills.discover()
        seqs = []
        r = skills.call("summarise", {"text": "abc"}, on_event=lambda e: seqs.append(e.seq))
        return {"skills": [s.name for s in found], "seqs": seqs, "result": r.data}
    if scenario == "chain":
        phases: list = []
        node = {"node_id": "a", "kind": "tool", "name": "echo", "input": {"text": "c"}}
        r = ChainsAPI(client).run(
            [node], "a", on_event=lambda e: phases.append(f"{e.node_id}:{e.phase}")
        )
        return {"phases": phases, "success": r.success, "final_output": r.final_output}
    if scenario == "proc":
        lines: list = []
        exit_code: list = []
        ended = threading.Event()

        def on_output(e) -> None:
            if e.stream_type == "killed":
                exit_code.append(e.data.get("code"))
                ended.set()
            elif isinstance(e.data.get("text"), str):
                lines.append(e.data["text"])

        resp = ProcsAPI(client).spawn(["sh", "-c", "echo hi"], on_output=on_output)
        if not resp.ok:
            raise RuntimeError(f"spawn refused: {resp.error}")
        # ProcsAPI has no read call: output reaches `on_output` or nothing.
        if not ended.wait(10):
            raise Unsupported(
                f"no exit event reached on_output within 10 s (output seen: {lines!r})"
            )
        return {"stdout": "\n".join(lines), "code": exit_code[0]}
    if scenario == "shutdown":
        # disconnect() sends `shutdown` (its timeout is not settable) and stops the transport.
        client.disconnect()
        return {}
    raise Unsupported(f"unknown scenario `{scenario}`")


def main() -> None:
    if len(sys.argv) < 2:
        report({"error": "usage: python_reference_client.py TARGET"}, 2)
    target = sys.argv[-1]
    scenario = os.environ.get("A2E_CONFORMANCE_SCENARIO", "")
    timer = threading.Timer(DRIVER_LIMIT_SECS, out_of_time)
    timer.daemon = True
    timer.start()
    try:
        client = make_client(scenario, target)
    except Exception as e:
        report({"error": f"{type(e).__name__}: {e}"}, 1)
    if scenario == "handshake-refused":
        try:
            client.connect()
        except Exception as e:
            client.disconnect()
            # The SDK raises ConnectionError("Handshake failed: <reason>"):
            # the reason exists only inside the message text.
            report({"error": f"{type(e).__name__}: {e}", "reason": str(e)}, 0)
        client.disconnect()
        report({"error": "the handshake was accepted"}, 1)
    try:
        client.connect()
        result, code = act(scenario, client), 0
    except Exception as e:
        result, code = {"error": f"{type(e).__name__}: {e}"}, 1
    started = time.monotonic()
    client.disconnect()
    LOG.info("disconnected in %.2fs", time.monotonic() - started)
    report(result, code)


if __name__ == "__main__":
    main()
