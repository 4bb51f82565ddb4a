// A legacy (2025-11-25) client over Streamable HTTP, built with the
// TypeScript SDK 1.x as VS Code-era clients are: runs a session against the
// URL given and prints what it saw as one JSON object.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node legacy_http_client.mjs URL
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(pathToFileURL(`${sdk}/dist/esm/client/index.js`).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(`${sdk}/dist/esm/client/streamableHttp.js`).href);
const {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} = await import(pathToFileURL(`${sdk}/dist/esm/types.js`).href);

const url = new URL(process.argv[2]);
const transport = new StreamableHTTPClientTransport(url);
const client = new Client({ name: "ts-legacy-http-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const out = { logs: [], updated: [], toolListChanges: 0 };

// An event a handler signals, awaited with a deadline.
function event(what) {
  let signal;
  const happened = new Promise((resolve) => (signal = resolve));
  const wait = () =>
    Promise.race([
      happened,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} within 20 s`)), 20000).unref()),
    ]);
  return { signal, wait };
}
const updated = event("resources/updated");
const listChanged = event("tools/list_changed");

client.setRequestHandler(ElicitRequestSchema, async (request) => {
  out.elicitMessage = request.params.message;
  return { action: "accept", content: { name: "TypeScript" } };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => out.logs.push(n.params.data));
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  out.updated.push(n.params.uri);
  updated.signal();
});
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  out.toolListChanges++;
  listChanged.signal();
});

await client.connect(transport);
out.server = client.getServerVersion();
out.sessionId = transport.sessionId ?? null;
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();

const sum = await client.callTool({ name: "add", arguments: { a: 19, b: 23 } });
out.sum = sum.content[0].text;

const progress = [];
await client.setLoggingLevel("info");
const slow = await client.callTool({ name: "slow", arguments: { steps: 3, step_ms: 20 } }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
out.slow = slow.content[0].text;
out.progress = progress;

const greeting = await client.callTool({ name: "ask_name", arguments: {} });
out.greeting = greeting.content[0].text;

await client.subscribeResource({ uri: "note://shopping" });
await client.callTool({ name: "set_note", arguments: { name: "shopping", text: "milk" } });
await updated.wait();

await client.callTool({ name: "toggle_bonus", arguments: {} });
await listChanged.wait();

await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
