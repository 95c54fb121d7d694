// Drives `a2e serve --mcp-stdio` with the official MCP TypeScript SDK (the client
// Claude Desktop, Claude Code, Cursor, VS Code and the MCP Inspector are built on):
// lists the tools (the SDK compiles their schemas), calls every built-in tool,
// and sends bad input. Prints one JSON object with what it saw.
//
//   node ts_sdk_check.mjs SDK_DIR A2E_BIN ROOT
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, a2e, root] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const types = await sdk("types.js");

// A local HTTP server for http_request, on the allow-list of the host's config.
const server = http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/plain" });
  res.end("pong");
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const port = server.address().port;
const config = path.join(root, "a2e.toml");
fs.writeFileSync(
  config,
  `[http]\nallow_hosts = ["127.0.0.1:${port}"]\n\n[commands]\nallow = ["echo"]\n`,
);

const transport = new StdioClientTransport({
  command: a2e,
  args: ["--config", config, "--root", root, "serve", "--mcp-stdio"],
  stderr: "ignore",
});
const client = new Client({ name: "ts-sdk-check", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion()?.name };
const listed = await client.listTools();
out.tools = listed.tools.map((t) => t.name).sort();

const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join("\n");
async function call(name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return { is_error: r.isError === true, text: text(r).slice(0, 300), types: (r.content ?? []).map((c) => c.type) };
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
}

const calls = {
  list_dir: { path: "notes" },
  read_file: { path: "notes/a.md" },
  write_file: { path: "out/new.txt", content: "written over MCP", create_dirs: true },
  glob: { pattern: "**/*.md" },
  grep: { pattern: "TODO" },
  run_command: { argv: ["echo", "hello"] },
  http_request: { url: `http://127.0.0.1:${port}/ping` },
  split_text: { text: "One. Two. Three.", by: "sentence" },
  text_stats: { text: "a b a" },
  transform: { expression: "sum(@)", data: [1, 2, 3] },
  memory_write: { namespace: "agent.mcp.notes", content: "remember this" },
  memory_search: { query: "remember", namespaces: ["agent.mcp.notes"] },
};
out.calls = {};
for (const [name, args] of Object.entries(calls)) {
  out.calls[name] = await call(name, args);
}
const written = out.calls.memory_write.text.match(/"id":\s*"([^"]+)"/);
out.calls.memory_delete = written ? await call("memory_delete", { id: written[1] }) : { missing: out.calls.memory_write };
out.calls.read_image = await call("read_file", { path: "pixel.png" });

// Bad input: each a JSON-RPC error naming what is wrong; the session goes on.
async function rpcError(method, params) {
  try {
    await client.request({ method, params }, types.EmptyResultSchema ?? types.ResultSchema);
    return { ok: true };
  } catch (e) {
    return { code: e.code, message: String(e.message) };
  }
}
out.bad = {
  unknown_method: await rpcError("no/such_method", {}),
  wrong_params: await rpcError("tools/call", { arguments: {} }),
  escaping_uri: await rpcError("resources/read", { uri: `file://${root}/../../etc/passwd` }),
  missing_prompt_argument: await rpcError("prompts/get", { name: "needs_topic", arguments: {} }),
  huge_argument: await call("text_stats", { text: "x".repeat(10 * 1024 * 1024) }),
};
out.after = await call("list_dir", { path: "." });
await client.close();
server.close();
console.log(JSON.stringify(out));
