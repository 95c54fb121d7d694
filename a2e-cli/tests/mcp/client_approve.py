"""An MCP client whose user decides on a call that waits for approval, with
the official MCP Python SDK over `a2e serve --mcp-stdio`.

    client_approve.py MODE TOOL ARGS_JSON COMMAND [ARGS...]

MODE is `approve` (every elicitation accepted with approve = true), `deny`
(accepted with approve = false and a reason) or `decline`. Calls TOOL with
ARGS_JSON and prints one JSON object: the result and every elicitation the
client received.
"""
import json
import sys

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    mode, tool, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:])
    forms: list = []

    async def elicit(context, request):
        forms.append(request.model_dump(mode="json", by_alias=True, exclude_none=True))
        if mode == "decline":
            return types.ElicitResult(action="decline")
        if mode == "deny":
            return types.ElicitResult(action="accept", content={"approve": False, "reason": "too risky"})
        return types.ElicitResult(action="accept", content={"approve": True})

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            result = await session.call_tool(tool, args)
            text = " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")
            out = {"is_error": result.is_error, "text": text, "forms": forms}
    print(json.dumps(out))


anyio.run(main)
