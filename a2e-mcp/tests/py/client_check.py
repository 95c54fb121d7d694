"""Drives an MCP server with the official Python SDK's ClientSession.

    client_check.py stdio COMMAND [ARGS...]
    client_check.py http URL [TOKEN]

Lists the tools, calls several (nested arguments, progress, an error, a
cancellation by timeout) and prints one JSON object with what it saw.
"""
import json
import sys

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def exercise(session: ClientSession) -> dict:
    init = await session.initialize()
    out: dict = {"server": init.server_info.name}
    tools = await session.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    nested = next(t for t in tools.tools if t.name == "nested")
    out["nested_schema"] = nested.input_schema

    greet = await session.call_tool("greet", {"name": "Ada", "style": "shout"})
    out["greet"] = greet.content[0].text

    order = {"order": {"id": 7, "address": {"city": "Lima", "zip": "15001"}}}
    nested_result = await session.call_tool("nested", order)
    out["nested"] = nested_result.structured_content

    seen = []

    async def on_progress(progress, total, message):
        seen.append([progress, total, message])

    slow = await session.call_tool("slow", {"steps": 4}, progress_callback=on_progress)
    out["slow"] = slow.structured_content
    out["progress"] = seen

    fail = await session.call_tool("fail", {})
    out["fail"] = {"is_error": fail.is_error, "text": fail.content[0].text}

    try:
        await session.call_tool("wait_for_cancel", {}, read_timeout_seconds=0.5)
        out["wait_for_cancel"] = "returned"
    except Exception as e:  # the SDK raises on its timeout and sends notifications/cancelled
        out["wait_for_cancel"] = type(e).__name__
    count = 0
    for _ in range(100):
        res = await session.call_tool("cancelled_count", {})
        count = res.structured_content["count"]
        if count:
            break
        await anyio.sleep(0.02)
    out["cancelled_count"] = count
    return out


async def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                result = await exercise(session)
    elif mode == "http":
        headers = {"Authorization": f"Bearer {sys.argv[3]}"} if len(sys.argv) > 3 else {}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client:
            async with streamable_http_client(sys.argv[2], http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    result = await exercise(session)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


anyio.run(main)
