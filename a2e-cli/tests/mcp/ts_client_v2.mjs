// Drives `a2e serve --mcp-http` with the official MCP TypeScript SDK's client, its v2
// line (npm @modelcontextprotocol/client), at one protocol revision: 2025-11-25 (a
// session, `initialize`) or 2026-07-28 (stateless, `server/discover`). It lists the
// tools, calls one, and calls a skill without its required argument: the host asks the
// user (elicitation) and the skill then asks the client's model (sampling) — as
// requests in a session, or as `input_required` rounds the SDK answers through the same
// handlers. Prints one JSON object with what it saw.
//
//   node ts_client_v2.mjs CLIENT_DIR URL REVISION
import path from "node:path";
import { pathToFileURL } from "node:url";

const [clientDir, url, revision] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(clientDir, "dist/index.mjs")).href
);

const seen = { forms: [], prompts: [] };
const client = new Client(
  { name: "a2e-ts-v2-check", version: "1.0.0" },
  {
    capabilities: { elicitation: { form: {} }, sampling: {} },
    versionNegotiation: {
      mode: revision === "2026-07-28" ? { pin: "2026-07-28" } : "legacy",
    },
  },
);
client.setRequestHandler("elicitation/create", async (request) => {
  seen.forms.push(request.params.message);
  return { action: "accept", content: { topic: "tides" } };
});
client.setRequestHandler("sampling/createMessage", async (request) => {
  seen.prompts.push(JSON.stringify(request.params.messages));
  return {
    model: "ts-model",
    role: "assistant",
    content: { type: "text", text: "The tides rise twice a day." },
    stopReason: "endTurn",
  };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
seen.version = client.getNegotiatedProtocolVersion();
const text = (result) => (result.content ?? []).map((c) => c.text ?? "").join("");

const listed = await client.listTools();
seen.tools = listed.tools.map((t) => t.name);
const read = await client.callTool({ name: "read_file", arguments: { path: "notes.md" } });
seen.read = { isError: read.isError ?? false, text: text(read) };
const skill = seen.tools.find((n) => n.includes("write_about"));
const wrote = await client.callTool({ name: skill, arguments: {} });
seen.skill = { name: skill, isError: wrote.isError ?? false, text: text(wrote) };
await client.close();
console.log(JSON.stringify(seen));
