"""Drives `a2e serve --mcp-stdio` or `--mcp-http` with the official MCP Python SDK.

    host_check.py stdio COMMAND [ARGS...]
    host_check.py http URL

Lists the tools and calls a built-in tool, a refused call, and a skill; prints
one JSON object with what it saw.
"""
import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
import httpx2
from mcp.client.streamable_http import streamable_http_client


async def exercise(session: ClientSession) -> dict:
    init = await session.initialize()
    out: dict = {"server": init.server_info.name}
    tools = await session.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    listed = await session.call_tool("list_dir", {"path": "notes"})
    out["list_dir"] = {"is_error": listed.is_error, "text": listed.content[0].text}
    escape = await session.call_tool("read_file", {"path": "../../etc/passwd"})
    out["escape"] = {"is_error": escape.is_error, "text": escape.content[0].text}
    seen = []

    async def on_progress(progress, total, message):
        seen.append([progress, total, message])

    skill = await session.call_tool(
        "skill__find_todos", {"pattern": "TODO"}, progress_callback=on_progress
    )
    out["skill"] = {"is_error": skill.is_error, "text": skill.content[0].text}
    # The name skills had before still calls them.
    legacy = await session.call_tool("skill.find_todos", {"pattern": "TODO"})
    out["legacy_skill"] = {"is_error": legacy.is_error}
    return out


async def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                result = await exercise(session)
    elif mode == "http":
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as client:
            async with streamable_http_client(sys.argv[2], http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    result = await exercise(session)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


anyio.run(main)
