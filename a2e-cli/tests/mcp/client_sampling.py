"""An MCP client whose own model answers the host's sampling requests, with
the official MCP Python SDK over `a2e serve --mcp-stdio`.

    client_sampling.py MODE SKILL ARGS_JSON COMMAND [ARGS...]

MODE is `tools` (sampling with the `tools` capability: the scripted model
first asks for `read_file` of `notes.md`, then answers with what it read),
`plain` (sampling without tools: it answers at once), `refuse` (sampling
declared, every request refused) or `none` (no sampling), optionally with
`+elicit` (elicitation declared: every form is accepted with `tides` for each
string field) or `+decline` (every form declined). Calls the tool
`skill__SKILL` with ARGS_JSON and prints one JSON object: the result, every
sampling request and every elicitation request the client received.
"""
import json
import sys

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    mode, *extras = sys.argv[1].split("+")
    skill, args = sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:])
    asked: list = []
    forms: list = []

    async def elicit(context, request):
        forms.append(request.model_dump(mode="json", by_alias=True, exclude_none=True))
        if "decline" in extras:
            return types.ElicitResult(action="decline")
        fields = forms[-1]["requestedSchema"]["properties"]
        return types.ElicitResult(
            action="accept",
            content={name: "tides" for name, field in fields.items() if field.get("type") == "string"},
        )

    async def sample(context, request: types.CreateMessageRequestParams):
        asked.append(request.model_dump(mode="json", by_alias=True, exclude_none=True))
        if mode == "refuse":
            return types.ErrorData(code=-1, message="the user declined to run the model")
        results = [
            block
            for message in request.messages
            for block in (message.content if isinstance(message.content, list) else [message.content])
            if getattr(block, "type", "") == "tool_result"
        ]
        if request.tools and not results:
            return types.CreateMessageResultWithTools(
                role="assistant",
                content=[
                    types.ToolUseContent(
                        type="tool_use", id="call-1", name="read_file", input={"path": "notes.md"}
                    )
                ],
                model="client-model",
                stop_reason="toolUse",
            )
        read = " ".join(c.text for r in results for c in r.content if getattr(c, "type", "") == "text")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"Summary from the client: {read or 'nothing read'}"),
            model="client-model",
            stop_reason="endTurn",
        )

    kwargs: dict = {}
    if mode != "none":
        kwargs["sampling_callback"] = sample
    if extras:
        kwargs["elicitation_callback"] = elicit
    if mode == "tools":
        kwargs["sampling_capabilities"] = types.SamplingCapability(tools=types.SamplingToolsCapability())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **kwargs) as session:
            await session.initialize()
            result = await session.call_tool(f"skill__{skill}", args)
            text = " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")
            out = {
                "is_error": result.is_error,
                "text": text,
                "structured": result.structured_content,
                "asked": asked,
                "forms": forms,
            }
    print(json.dumps(out))


anyio.run(main)
