"""An A2A agent on the official A2A Python SDK (a2a-sdk), for a2e to call.

usage: agent.py PORT

Skill `shout`: upper-cases the `text` of its data part (or of its text part),
reporting one working status on the way; a text of "slow" waits until the
task is cancelled. Prints `listening http://127.0.0.1:PORT` once it serves.
"""

import asyncio
import sys

import uvicorn
from google.protobuf import json_format
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCard, Part, Task, TaskState, TaskStatus

PORT = int(sys.argv[1])
URL = f"http://127.0.0.1:{PORT}"

CARD = json_format.ParseDict(
    {
        "name": "shouter",
        "description": "Upper-cases what it is told.",
        "supportedInterfaces": [
            {"url": f"{URL}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "version": "1.0.0",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": "shout",
                "name": "Shout",
                "description": "Upper-cases a text",
                "tags": ["text"],
            }
        ],
    },
    AgentCard(),
)


def text_of(message):
    for part in message.parts:
        if part.HasField("data"):
            data = json_format.MessageToDict(part.data)
            if isinstance(data, dict) and "text" in data:
                return str(data["text"])
        if part.HasField("text"):
            return part.text
    return ""


class Shouter(AgentExecutor):
    async def execute(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        text = text_of(context.message)
        skill = json_format.MessageToDict(context.message.metadata).get("skill", "")
        await updater.start_work(
            updater.new_agent_message([Part(text=f"shouting for skill {skill}")])
        )
        if text == "slow":
            await asyncio.sleep(120)
        part = json_format.ParseDict({"data": {"shout": text.upper()}}, Part())
        await updater.add_artifact([part], name="shout")
        await updater.complete()

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


handler = DefaultRequestHandler(
    agent_executor=Shouter(), task_store=InMemoryTaskStore(), agent_card=CARD
)
app = Starlette(
    routes=create_agent_card_routes(CARD) + create_jsonrpc_routes(handler, rpc_url="/")
)


class Server(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        print(f"listening {URL}", file=sys.stderr, flush=True)


Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning")).run()
