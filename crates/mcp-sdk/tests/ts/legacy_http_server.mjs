// A 2025-11-25 server over Streamable HTTP with sessions, built with the
// TypeScript SDK 1.x as most deployed servers are: tools `echo`, `ask`
// (a form elicitation of the client) and `grow` (registers a tool, so a
// list change goes out on the session's GET stream), and `sessions` (how
// many sessions are open: a DELETE closes one). Prints its port on stdout.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node legacy_http_server.mjs
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const { McpServer } = await import(pathToFileURL(`${sdk}/dist/esm/server/mcp.js`).href);
const { StreamableHTTPServerTransport } = await import(pathToFileURL(`${sdk}/dist/esm/server/streamableHttp.js`).href);
const { isInitializeRequest } = await import(pathToFileURL(`${sdk}/dist/esm/types.js`).href);
const { z } = await import(pathToFileURL(`${sdk}/../../zod/index.js`).href);

const transports = new Map();

function newServer() {
  const server = new McpServer({ name: "ts-legacy-http", version: "1.0.0" });
  server.registerTool("echo", { inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  server.registerTool("ask", { inputSchema: {} }, async () => {
    const answer = await server.server.elicitInput({
      message: "Your name?",
      requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    });
    return { content: [{ type: "text", text: `${answer.action}: ${answer.content?.name ?? ""}` }] };
  });
  let grown = 0;
  server.registerTool("grow", { inputSchema: {} }, async () => {
    grown += 1;
    server.registerTool(`grown-${grown}`, { inputSchema: {} }, async () => ({ content: [{ type: "text", text: "new" }] }));
    return { content: [{ type: "text", text: `grown ${grown}` }] };
  });
  server.registerTool("sessions", { inputSchema: {} }, async () => ({
    content: [{ type: "text", text: String(transports.size) }],
  }));
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

const http = createServer(async (req, res) => {
  const id = req.headers["mcp-session-id"];
  const body = req.method === "POST" ? await readBody(req) : undefined;
  let transport = id ? transports.get(id) : undefined;
  if (!transport && req.method === "POST" && isInitializeRequest(body)) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => transports.set(sid, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  if (!transport) {
    res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session" }, id: null }));
    return;
  }
  await transport.handleRequest(req, res, body);
});
http.listen(0, "127.0.0.1", () => console.log(http.address().port));
