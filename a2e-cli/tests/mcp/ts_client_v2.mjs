// Drives `a2e serve --mcp-http` with the official MCP TypeScript SDK's client, its v2
// line (npm @modelcontextprotocol/client), at one protocol revision: 2025-11-25 (a
// session, `initialize`) or 2026-07-28 (stateless, `server/discover`). It lists the
// tools, calls one, and calls a skill without its required argument: the host asks the
// user (elicitation) and the skill then asks the client's model (sampling) — as
// requests in a session, or as `input_required` rounds the SDK answers through the same
// handlers. At 2026-07-28 it also runs a skill as a task with the official client of
// the tasks extension (npm @modelcontextprotocol/ext-tasks, beside the client): the
// skill, called without its argument, asks the user inside the task, answered with
// `tasks/update`. Prints one JSON object with what it saw.
//
//   node ts_client_v2.mjs CLIENT_DIR URL REVISION
import path from "node:path";
import { pathToFileURL } from "node:url";

const [clientDir, url, revision] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(clientDir, "dist/index.mjs")).href
);

const seen = { forms: [], prompts: [] };
let nextId = 1; // of the requests the tasks client's raw path sends
const clientInfo = { name: "a2e-ts-v2-check", version: "1.0.0" };
const capabilities = { elicitation: { form: {} }, sampling: {} };
if (revision === "2026-07-28") {
  capabilities.extensions = { "io.modelcontextprotocol/tasks": {} };
}
const client = new Client(
  clientInfo,
  {
    capabilities,
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
if (revision === "2026-07-28") {
  seen.task = await runTask();
}
await client.close();
console.log(JSON.stringify(seen));

// A 2026-07-28 request as the tasks client frames it, posted as it is (the SDK's own
// request path refuses a `resultType: "task"`): the host coordinates ids and headers.
async function rawDispatch(framed) {
  const request = { jsonrpc: "2.0", id: `task-${nextId++}`, ...framed };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": request.method,
  };
  const name = request.params?.name ?? request.params?.uri ?? request.params?.taskId;
  if (name !== undefined) headers["mcp-name"] = name;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(request) });
  const body = await response.text();
  let message;
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    message = body
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => JSON.parse(line.slice(5)))
      .find((m) => m.id === request.id);
  } else {
    message = JSON.parse(body);
  }
  if (!message) throw new Error(`no answer to ${request.method}`);
  return message.error
    ? { kind: "error", error: message.error }
    : { kind: "result", result: message.result };
}

async function runTask() {
  const tasksDir = path.join(clientDir, "..", "ext-tasks");
  const { createTaskSessionFromClient, resultFromTaskOutcome } = await import(
    pathToFileURL(path.join(tasksDir, "dist/client/index.js")).href
  );
  const asked = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: "a2e-ts-v2-check",
    rawDispatch,
    v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities: capabilities },
    onInputRequest: async (request, context) => {
      asked.push({ kind: request.kind, scope: context.scope, delivery: context.delivery });
      return { action: "accept", content: { topic: "tides" } };
    },
  });
  try {
    const execution = await session.callTool("skill__write_note", {});
    // A task that never ends fails the check instead of hanging it.
    const limit = new Promise((_, reject) =>
      setTimeout(() => reject(new Error("the task did not settle in 60 s")), 60_000).unref(),
    );
    const { outcome } = await Promise.race([execution.settle(), limit]);
    const result = resultFromTaskOutcome(outcome);
    return { status: outcome.status, taskId: outcome.task?.taskId, asked, text: text(result) };
  } finally {
    await session.close();
  }
}
