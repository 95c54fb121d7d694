"""Answers a2e's approval questions with the official A2A Python SDK (a2a-sdk).

usage: approve.py BASE_URL BINDING A2E_BINARY ROOT

The agent offers `guarded` (a program skill an [[approvals]] rule holds back)
and `cleanup` (a chain skill whose `run_command` node a rule holds back). Each
task waits for input; the SDK answers it (approve, deny, edited arguments),
or an operator does with `a2e runs approve`. Prints one JSON report of what
the SDK saw.
"""

import asyncio
import json
import subprocess
import sys

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import GetTaskRequest, ListTasksRequest, SendMessageRequest, TaskState


def as_dict(message):
    return json_format.MessageToDict(message)


def request(message):
    return json_format.ParseDict({"message": message}, SendMessageRequest())


def ask(message_id, skill, data):
    return request({
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"data": data}],
        "metadata": {"skill": skill},
    })


def reply(message_id, task, part):
    return request({
        "messageId": message_id,
        "role": "ROLE_USER",
        "taskId": task["id"],
        "contextId": task["contextId"],
        "parts": [part],
    })


async def error_of(events):
    try:
        async for _ in events:
            pass
    except Exception as e:  # the SDK's A2A error types, by name
        return {"type": type(e).__name__, "text": str(e)}
    return None


async def main(base, binding, a2e, root):
    report = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()

        def client(streaming):
            config = ClientConfig(
                streaming=streaming,
                supported_protocol_bindings=[binding],
                httpx_client=http,
            )
            return create_client(card, config)

        blocking = await client(False)
        streaming = await client(True)

        async def last_task(events):
            seen = [as_dict(e) async for e in events]
            return seen[-1]["task"]

        # A: asked, read, listed, an unclear answer refused, then approved.
        task = await last_task(blocking.send_message(ask("a-1", "guarded", {"word": "hi"})))
        report["asked"] = task
        report["get_waiting"] = as_dict(await blocking.get_task(GetTaskRequest(id=task["id"])))
        listed = await blocking.list_tasks(ListTasksRequest(
            context_id=task["contextId"], status=TaskState.TASK_STATE_INPUT_REQUIRED))
        report["listed_waiting"] = as_dict(listed)
        report["unclear"] = await error_of(blocking.send_message(
            reply("a-2", task, {"text": "maybe later"})))
        report["approved"] = await last_task(blocking.send_message(
            reply("a-3", task, {"text": "approve"})))

        # B: streamed, then denied over a stream.
        report["streamed"] = [as_dict(e) async for e in streaming.send_message(
            ask("b-1", "guarded", {"word": "no"}))]
        waiting = report["streamed"][0]["task"]
        report["denied"] = [as_dict(e) async for e in streaming.send_message(
            reply("b-2", waiting, {"text": "deny not today"}))]

        # C: a chain skill's node waits; approved with other arguments.
        task = await last_task(blocking.send_message(ask("c-1", "cleanup", {})))
        report["nested_asked"] = task
        edited = {"approve": True, "arguments": {"argv": ["sh", "-c", "echo edited"]}}
        report["edited"] = await last_task(blocking.send_message(
            reply("c-2", task, {"data": edited})))

        # D: an operator decides; the task goes on without the client.
        task = await last_task(blocking.send_message(ask("d-1", "guarded", {"word": "op"})))
        notice = task["status"]["message"]["parts"][1]["data"]
        subprocess.run(
            [a2e, "runs", "approve", notice["run_id"], "--node", notice["node_id"],
             "--root", root],
            check=True, capture_output=True)
        for _ in range(300):
            after = as_dict(await blocking.get_task(GetTaskRequest(id=task["id"])))
            if after["status"]["state"] == "TASK_STATE_COMPLETED":
                break
            await asyncio.sleep(0.1)
        report["operator"] = after
        report["ended"] = await error_of(blocking.send_message(
            reply("d-2", task, {"text": "approve"})))
        await blocking.close()
        await streaming.close()
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:5]))
