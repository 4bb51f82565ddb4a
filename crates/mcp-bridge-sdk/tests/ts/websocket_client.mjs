// The TypeScript SDK 1.x's WebSocket client transport (subprotocol "mcp")
// against our WebSocket server: sends a tools/list and a tools/call of
// revision 2026-07-28 and prints both answers as one JSON array.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node websocket_client.mjs URL META_JSON
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const { WebSocketClientTransport } = await import(pathToFileURL(`${sdk}/dist/esm/client/websocket.js`).href);

const [url, metaJson] = process.argv.slice(2);
const _meta = JSON.parse(metaJson);
const transport = new WebSocketClientTransport(new URL(url));
const answers = [];
const done = new Promise((resolve, reject) => {
  transport.onmessage = (message) => {
    answers.push(message);
    if (answers.length === 2) resolve();
  };
  transport.onerror = reject;
  setTimeout(() => reject(new Error("no answers within 10 s")), 10000).unref();
});
await transport.start();
await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta } });
await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ping", arguments: {}, _meta } });
await done;
process.stdout.write(JSON.stringify(answers));
await transport.close();
