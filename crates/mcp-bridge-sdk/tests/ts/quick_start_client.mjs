// The TypeScript SDK 1.x's Client (a 2025-11-25 client, as VS Code's) uses
// the SDK's quick-start server (examples/typed_tool_server.rs): on stdio,
// started as a child, over Streamable HTTP or over WebSocket at a URL.
// Prints the server's name, its tools' names and the text of add(2, 3) as
// one JSON object.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node quick_start_client.mjs stdio SERVER_PROGRAM
//        TS_SDK_DIR=... node quick_start_client.mjs http URL
//        TS_SDK_DIR=... node quick_start_client.mjs websocket URL
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const load = (path) => import(pathToFileURL(`${sdk}/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");

const [how, where] = process.argv.slice(2);
let transport;
if (how === "stdio") {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ command: where, args: [] });
} else if (how === "websocket") {
  const { WebSocketClientTransport } = await load("client/websocket.js");
  transport = new WebSocketClientTransport(new URL(where));
} else {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(where));
}
const client = new Client({ name: "quick-start-client", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
process.stdout.write(
  JSON.stringify({
    server: client.getServerVersion()?.name,
    tools: tools.map((tool) => tool.name),
    add: result.content.map((block) => block.text).join(""),
  }),
);
await client.close();
