"""The reference SDK's buyer against an a2e provider: a streamed invoke, then
a cancelled one. Prints one JSON object per line. Usage:
    python3 their_buyer.py SDK_DIR WS_URL TOKEN
"""

import asyncio
import json
import sys

sys.path.insert(0, sys.argv[1] + "/src")

from websockets.asyncio.client import connect  # noqa: E402

from acmp import Buyer, Payload, Task  # noqa: E402
from acmp.ws_transport import WebSocketTransport  # noqa: E402


async def main() -> None:
    url, token = sys.argv[2], sys.argv[3]
    connection = await connect(url, additional_headers={"Authorization": f"Bearer {token}"})
    async with Buyer(WebSocketTransport(connection)) as buyer:
        chunks = []
        task = Task(
            capability="text_stats",
            input=Payload(type="text", data="one two three."),
            stream=True,
        )
        result = await buyer.invoke(task, on_chunk=lambda c, seq, final: chunks.append([c.data, seq, final]))
        print(json.dumps({"streamed": result.output_streamed, "cost_cu": result.cost_cu, "chunks": chunks}), flush=True)
        slow = Task(
            capability="shell",
            input=Payload(type="json", data={"argv": ["sh", "-c", "sleep 20.0811"], "timeout": 60}),
            timeout_ms=60000,
        )
        invoke = asyncio.create_task(buyer.invoke(slow))
        await asyncio.sleep(1.0)
        await buyer.cancel(slow.task_id, reason="interop")
        try:
            await invoke
            print(json.dumps({"cancelled": None}), flush=True)
        except Exception as exc:  # AcmpError
            print(json.dumps({"cancelled": getattr(exc, "code", str(exc))}), flush=True)


asyncio.run(main())
