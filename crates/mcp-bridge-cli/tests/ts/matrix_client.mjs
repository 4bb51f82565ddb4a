// One row of the client matrix for the TypeScript SDK: "ts1" (1.x, whose
// package folder is in TS_SDK_DIR) or "ts2" (2.x, @modelcontextprotocol/client
// in TS_CLIENT_DIR) runs each operation against the example server at the
// given URL or through the given stdio command, and prints one JSON object:
// operation -> "ok" or what went wrong.
//
// Usage: node matrix_client.mjs ts1|ts2 URL | CMD [ARGS...]
import { pathToFileURL } from "node:url";

const [library, target, ...args] = process.argv.slice(2);
const url = target.startsWith("http") ? target : null;
const load = (dir, path) => import(pathToFileURL(`${dir}/${path}`).href);

let Client, StdioClientTransport, StreamableHTTPClientTransport, ElicitRequestSchema;
if (library === "ts1") {
  const sdk = process.env.TS_SDK_DIR;
  ({ Client } = await load(sdk, "dist/esm/client/index.js"));
  ({ StdioClientTransport } = await load(sdk, "dist/esm/client/stdio.js"));
  ({ StreamableHTTPClientTransport } = await load(sdk, "dist/esm/client/streamableHttp.js"));
  ({ ElicitRequestSchema } = await load(sdk, "dist/esm/types.js"));
} else {
  const dir = process.env.TS_CLIENT_DIR;
  ({ Client, StreamableHTTPClientTransport, ElicitRequestSchema } = await load(dir, "dist/index.mjs"));
  ({ StdioClientTransport } = await load(dir, "dist/stdio.mjs"));
}

const out = {};
const cell = async (op, action) => {
  try {
    out[op] = (await action()) ? "ok" : "unexpected answer";
  } catch (e) {
    out[op] = `${e?.name ?? "Error"}: ${e?.message ?? e}`.slice(0, 200);
  }
};

const client = new Client({ name: `matrix-${library}`, version: "1.0.0" }, { capabilities: { elicitation: {} } });
const onElicit = async () => ({ action: "accept", content: { name: "Matrix" } });
if (ElicitRequestSchema) client.setRequestHandler(ElicitRequestSchema, onElicit);
else client.setRequestHandler("elicitation/create", onElicit);
const transport = url ? new StreamableHTTPClientTransport(new URL(url)) : new StdioClientTransport({ command: target, args });
await cell("connect", async () => (await client.connect(transport), true));
if (out.connect === "ok") {
  await cell("tools/list", async () => (await client.listTools()).tools.some((t) => t.name === "add"));
  await cell("tools/call", async () => (await client.callTool({ name: "add", arguments: { a: 19, b: 23 } })).content[0].text === "42");
  await cell("elicitation", async () => (await client.callTool({ name: "ask_name", arguments: {} })).content[0].text === "Hello, Matrix!");
  await cell("prompts/get", async () =>
    (await client.getPrompt({ name: "greet", arguments: { name: "Ada", style: "formal" } })).messages[0].content.text.includes("Ada"));
  await cell("resources/read", async () => Boolean((await client.readResource({ uri: "example://readme" })).contents[0].text));
}
console.log(JSON.stringify(out));
await client.close();
