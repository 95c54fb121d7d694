"""Talks with skills that speak A2A through their output (a2a-sdk client).

usage: turns.py BASE_URL BINDING

The agent offers program skills: `ask` (asks which city, then answers with
an artifact), `direct` (answers with a message, no task), `refuse` (rejects
the task) and `chunks` (streams an artifact in two chunks). Prints one JSON
report of what the SDK saw.
"""

import asyncio
import json
import sys

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import GetTaskRequest, SendMessageRequest


def as_dict(message):
    return json_format.MessageToDict(message)


def message(message_id, text, skill=None, task=None):
    body = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    if skill:
        body["metadata"] = {"skill": skill}
    if task:
        body["taskId"] = task["id"]
        body["contextId"] = task["contextId"]
    return json_format.ParseDict({"message": body}, SendMessageRequest())


async def main(base, binding):
    report = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()

        async def client(streaming):
            config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding],
                                  httpx_client=http)
            return await create_client(card, config)

        blocking = await client(False)
        streaming = await client(True)

        async def events(c, request):
            return [as_dict(e) async for e in c.send_message(request)]

        # Two turns, blocking: asked, answered.
        asked = (await events(blocking, message("t-1", "start", "ask")))[-1]["task"]
        report["asked"] = asked
        report["get_asked"] = as_dict(await blocking.get_task(GetTaskRequest(id=asked["id"])))
        report["answered"] = (await events(blocking, message("t-2", "Paris", task=asked)))[-1]

        # Two turns, streamed.
        report["streamed"] = await events(streaming, message("t-3", "start", "ask"))
        waiting = report["streamed"][0]["task"]
        report["streamed_answer"] = await events(streaming, message("t-4", "Rome", task=waiting))

        report["direct"] = (await events(blocking, message("t-5", "hi", "direct")))[-1]
        report["refused"] = (await events(blocking, message("t-6", "hi", "refuse")))[-1]["task"]
        report["chunks"] = await events(streaming, message("t-7", "hi", "chunks"))
        await blocking.close()
        await streaming.close()
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:3]))
