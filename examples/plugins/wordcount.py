"""An A2E plugin in Python (standard library only): one tool, `wordcount`.

Mount it in the `a2e` host with
    [[plugins]]
    name = "wordcount"
    command = ["python3", "examples/plugins/wordcount.py"]
It answers the plugin protocol of docs/plugin-protocol.md: one JSON message
a line on stdin and stdout, logs on stderr, exit when stdin closes.
"""
import json, sys, time, uuid

TOOL = {"name": "wordcount", "description": "Count the words of a text",
        "input_parameters": [{"name": "text", "type": "string", "required": True,
                              "description": "The text whose words are counted"}]}

def send(msg):
    msg.update(id=uuid.uuid4().hex, version="1.0", ts=time.time())
    print(json.dumps(msg, separators=(",", ":")), flush=True)

def refuse(req_id, code, message):
    send({"type": "error", "req_id": req_id, "code": code, "message": message})

for line in sys.stdin:
    try:
        req = json.loads(line)
        kind, rid, args = req.get("type"), req.get("id", ""), req.get("arguments")
    except (ValueError, AttributeError) as e:
        refuse("", "parse_error", f"not a JSON object: {e}")
        continue
    if kind == "handshake/req":
        send({"type": "handshake/resp", "req_id": rid, "session_id": uuid.uuid4().hex, "ok": True,
              "accepted_caps": [{"capability": "tools", "enabled": True}]})
    elif kind == "ping":
        send({"type": "pong", "req_id": rid})
    elif kind == "tool/list/req":
        send({"type": "tool/list/resp", "req_id": rid, "tools": [TOOL]})
    elif kind == "tool/call/req" and req.get("tool_name") != "wordcount":
        refuse(rid, "unknown_tool", f"unknown tool `{req.get('tool_name')}`")
    elif kind == "tool/call/req" and not (isinstance(args, dict) and isinstance(args.get("text"), str)):
        refuse(rid, "schema_violation", "invalid arguments: $.text: a string is required")
    elif kind == "tool/call/req":
        if req.get("streaming"):
            send({"type": "tool/event", "req_id": rid, "kind": "progress", "seq": 0,
                  "data": {"pct": 50, "message": "counting"}})
        words = len(args["text"].split())
        send({"type": "tool/call/resp", "req_id": rid, "data": {
            "success": True, "tool_name": "wordcount", "data": {"words": words}, "duration_ms": 0}})
    elif kind == "shutdown":
        break
    else:
        refuse(rid, "invalid_message", f"`{kind}` is not served by this plugin")
