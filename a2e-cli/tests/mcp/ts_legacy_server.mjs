// An MCP server over stdio on the official TypeScript SDK's v1 line (npm
// @modelcontextprotocol/sdk), which speaks MCP 2025-11-25 and earlier: one tool, `echo`.
//
//   node ts_legacy_server.mjs SDK_DIR
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.argv[2];
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { McpServer } = await load("server/mcp.js");
const { StdioServerTransport } = await load("server/stdio.js");

const server = new McpServer({ name: "legacy", version: "1.0.0" });
server.registerTool("echo", { description: "Echoes its text" }, async () => ({
  content: [{ type: "text", text: "echo" }],
}));
await server.connect(new StdioServerTransport());
