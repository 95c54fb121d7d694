"""The reference SDK's provider on WebSocket for an a2e buyer: `shout`
(streamed, upper-cases its text) and `slow` (cancellable). Prints
"PORT n" once listening and "CANCELLED task_id" when a task is cancelled.
Usage: python3 their_provider.py SDK_DIR
"""

import asyncio
import sys

sys.path.insert(0, sys.argv[1] + "/src")

from acmp import Payload, Provider  # noqa: E402
from acmp import ws_transport  # noqa: E402


async def shout(task, ctx):
    return Payload(type="text", data=str(task.input.data).upper())


async def slow(task, ctx):
    # The SDK cancels the handler's asyncio task on acmp/cancel.
    try:
        for _ in range(600):
            if ctx.cancelled:
                break
            await ctx.heartbeat(progress=0.0)
            await asyncio.sleep(0.05)
        else:
            return Payload(type="text", data="done")
    except asyncio.CancelledError:
        print(f"CANCELLED {task.task_id}", flush=True)
        raise
    print(f"CANCELLED {task.task_id}", flush=True)
    return None


async def on_connection(transport, party_id):
    provider = Provider(
        transport,
        "agent:reference:local",
        output_streaming=True,
        heartbeat_interval_ms=100,
    )
    provider.register("shout", shout, price_cu=0.002, tokens_per_call=3)
    provider.register("slow", slow, price_cu=0.001)
    await provider.serve_forever()


async def main() -> None:
    server = await ws_transport.serve(on_connection, "127.0.0.1", 0)
    port = next(iter(server.sockets)).getsockname()[1]
    print(f"PORT {port}", flush=True)
    await server.serve_forever()


asyncio.run(main())
