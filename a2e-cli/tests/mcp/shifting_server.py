"""An MCP server (the official Python SDK) whose tools change while it runs.

It offers `keep`, `vanish` and `shift`. A call of `shift` drops `vanish`,
adds `appeared`, and sends `notifications/tools/list_changed`. Each call
answers with the tool's own name.
"""
import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

offered = {
    "keep": "Stays.",
    "vanish": "Goes away once shift is called.",
    "shift": "Changes the list of tools.",
}


async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=text, input_schema={"type": "object"})
            for name, text in offered.items()
        ]
    )


async def call_tool(ctx, params):
    if params.name not in offered:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"no tool {params.name}")],
            is_error=True,
        )
    if params.name == "shift":
        offered.pop("vanish", None)
        offered["appeared"] = "Came with shift."
        await ctx.session.send_tool_list_changed()
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


server = Server("shifting", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    options = server.create_initialization_options(
        notification_options=NotificationOptions(tools_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


anyio.run(main)
