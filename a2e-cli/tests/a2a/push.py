"""Sets a2e's push notifications with the official A2A Python SDK (a2a-sdk).

usage: push.py BASE_URL BINDING WEBHOOK

The agent offers `later` (answers after a second) and `echo` (at once). A
webhook of the test records what the agent posts to WEBHOOK/...; this script
sets, reads, lists and deletes configurations, and prints one JSON report of
what the SDK saw.
"""

import asyncio
import json
import sys

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    TaskPushNotificationConfig,
)


def as_dict(message):
    return json_format.MessageToDict(message)


def send(message_id, skill, data, configuration):
    return json_format.ParseDict({
        "message": {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"data": data}],
            "metadata": {"skill": skill},
        },
        "configuration": configuration,
    }, SendMessageRequest())


async def error_of(call):
    try:
        await call
    except Exception as e:  # the SDK's A2A error types, by name
        return {"type": type(e).__name__, "text": str(e)}
    return None


async def main(base, binding, webhook):
    report = {}
    tag = binding.replace("+", "")
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        report["capabilities"] = as_dict(card.capabilities)
        config = ClientConfig(streaming=False, supported_protocol_bindings=[binding],
                              httpx_client=http)
        client = await create_client(card, config)

        # A task that works a second: a webhook set while it works.
        events = [as_dict(e) async for e in client.send_message(
            send(f"{tag}-1", "later", {"n": 1}, {"returnImmediately": True}))]
        task = events[-1]["task"]
        report["later"] = task["id"]
        hook = json_format.ParseDict({
            "taskId": task["id"], "id": "hook-1", "url": f"{webhook}/{tag}/set",
            "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "cred-1"},
        }, TaskPushNotificationConfig())
        report["created"] = as_dict(await client.create_task_push_notification_config(hook))
        report["got"] = as_dict(await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-1")))
        report["listed"] = as_dict(await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task["id"])))
        for _ in range(300):
            after = as_dict(await client.get_task(GetTaskRequest(id=task["id"])))
            if after["status"]["state"] == "TASK_STATE_COMPLETED":
                break
            await asyncio.sleep(0.05)
        report["later_after"] = after

        # A webhook set with the message.
        events = [as_dict(e) async for e in client.send_message(send(
            f"{tag}-2", "echo", {"word": "pushed"},
            {"taskPushNotificationConfig": {"url": f"{webhook}/{tag}/sent", "token": "tok-2"}}))]
        report["echo"] = events[-1]["task"]["id"]

        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-1"))
        report["listed_after_delete"] = as_dict(await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task["id"])))

        # Refused: a host not on [http] allow_hosts, a config that is not there.
        private = json_format.ParseDict(
            {"taskId": task["id"], "url": "http://10.1.2.3/hook"}, TaskPushNotificationConfig())
        report["not_allowed"] = await error_of(
            client.create_task_push_notification_config(private))
        report["unknown"] = await error_of(client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-9")))
        await client.close()
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:4]))
