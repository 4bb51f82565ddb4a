// The benchmarks' TypeScript SDK 2.x server: tools `add` and `echo`, as
// `mcp-example-server` has them, served on both revisions by the SDK's own
// `createMcpHandler` (2025-11-25 requests go to its stateless legacy leg)
// behind `toNodeHandler` on node:http.
//
// Usage: TS_MODULES=.peers/bench/node_modules node server.mjs PORT
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const modules = process.env.TS_MODULES;
const load = (path) => import(pathToFileURL(`${modules}/${path}`).href);
const { McpServer, createMcpHandler } = await load("@modelcontextprotocol/server/dist/index.mjs");
const { toNodeHandler } = await load("@modelcontextprotocol/node/dist/index.mjs");
const { z } = await load("zod/index.js");

function benchServer() {
  const server = new McpServer({ name: "ts-bench-server", version: "1.0.0" });
  server.registerTool(
    "add",
    { description: "Adds two numbers.", inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  server.registerTool(
    "echo",
    { description: "Returns the text it is given.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
}

const handler = toNodeHandler(createMcpHandler(benchServer));
const port = Number(process.argv[2]);
createServer((req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  handler(req, res);
}).listen(port, "127.0.0.1");
