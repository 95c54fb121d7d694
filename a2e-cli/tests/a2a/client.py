"""Drives `a2e serve --a2a` with the official A2A Python SDK (a2a-sdk).

usage: client.py BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)

The agent offers the program skills `echo` (answers at once, one progress
event) and `slow` (waits until cancelled). Prints one JSON report of what the
SDK saw: the card, a blocking send, a streamed send, get, list, a task
subscribed to and cancelled, and the errors of an unknown task and of
cancelling a task that ended.
"""

import asyncio
import json
import sys

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
)


def as_dict(message):
    return json_format.MessageToDict(message)


def send_request(message_id, skill, data, immediately=False):
    request = {
        "message": {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"data": data}],
            "metadata": {"skill": skill},
        },
    }
    if immediately:
        request["configuration"] = {"returnImmediately": True}
    return json_format.ParseDict(request, SendMessageRequest())


async def error_of(call):
    try:
        await call
    except Exception as e:  # the SDK's A2A error types, by name
        return {"type": type(e).__name__, "text": str(e)}
    return None


async def main(base, binding):
    report = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        report["card"] = as_dict(card)

        def client(streaming):
            config = ClientConfig(
                streaming=streaming,
                supported_protocol_bindings=[binding],
                httpx_client=http,
            )
            return create_client(card, config)

        blocking = await client(False)
        events = [as_dict(e) async for e in blocking.send_message(
            send_request("m-1", "echo", {"word": "hello"}))]
        report["blocking"] = events
        task_id = events[-1]["task"]["id"]
        context_id = events[-1]["task"]["contextId"]
        report["get"] = as_dict(await blocking.get_task(GetTaskRequest(id=task_id)))

        streaming = await client(True)
        report["streamed"] = [as_dict(e) async for e in streaming.send_message(
            send_request("m-2", "echo", {"word": "streamed"}))]

        listed = await blocking.list_tasks(ListTasksRequest(context_id=context_id))
        report["listed"] = as_dict(listed)

        started = [as_dict(e) async for e in blocking.send_message(
            send_request("m-3", "slow", {"word": "wait"}, immediately=True))]
        slow_id = started[-1]["task"]["id"]
        report["slow_started"] = started

        async def watch():
            seen = []
            async for event in streaming.subscribe(SubscribeToTaskRequest(id=slow_id)):
                seen.append(as_dict(event))
            return seen

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(1.0)
        report["cancelled"] = as_dict(await blocking.cancel_task(CancelTaskRequest(id=slow_id)))
        report["subscribed"] = await asyncio.wait_for(watcher, 30)
        report["slow_after"] = as_dict(await blocking.get_task(GetTaskRequest(id=slow_id)))

        report["unknown_task"] = await error_of(
            blocking.get_task(GetTaskRequest(id="00000000-0000-4000-8000-000000000000")))
        report["cancel_ended"] = await error_of(
            blocking.cancel_task(CancelTaskRequest(id=task_id)))
        await blocking.close()
        await streaming.close()
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2]))
