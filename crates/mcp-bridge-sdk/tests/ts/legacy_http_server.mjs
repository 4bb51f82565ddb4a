// A 2025-11-25 server over Streamable HTTP with sessions, built with the
// TypeScript SDK 1.x as most deployed servers are: tools `echo`, `ask`
// (a form elicitation of the client) and `grow` (registers a tool, so a
// list change goes out on the session's GET stream), and `sessions` (how
// many sessions are open: a DELETE closes one). Its streams are resumable
// (an event store, `retry: 200`): `poll` closes its own stream before it
// answers (the client resumes it with Last-Event-ID), `drop_get` closes the
// GET stream, then changes the tool list while it is closed (the change is
// replayed when the client resumes it), `forget` drops the session (the
// next request gets 404). Prints its port on stdout.
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

// The SDK's example store cannot replay its GET stream (it reads the stream
// from the event id up to the first "_", and that stream's id starts with
// one), so a session's events are kept here, in order.
class EventStore {
  events = [];
  async storeEvent(streamId, message) {
    const eventId = String(this.events.length + 1);
    this.events.push({ eventId, streamId, message });
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.events.find((e) => e.eventId === eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((e) => e.eventId === lastEventId);
    if (at < 0) return "";
    const { streamId } = this.events[at];
    for (const e of this.events.slice(at + 1)) {
      if (e.streamId === streamId) await send(e.eventId, e.message);
    }
    return streamId;
  }
}

function newServer() {
  const server = new McpServer({ name: "ts-legacy-http", version: "1.0.0" });
  server.registerTool("echo", { inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  server.registerTool("ask", { inputSchema: {} }, async (_args, extra) => {
    // Related to the call, as a server in a tool does: it goes on the call's stream.
    const answer = await server.server.elicitInput(
      {
        message: "Your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      },
      { relatedRequestId: extra.requestId },
    );
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
  server.registerTool("poll", { inputSchema: {} }, async (_args, extra) => {
    extra.closeSSEStream?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { content: [{ type: "text", text: "answered after the poll" }] };
  });
  server.registerTool("drop_get", { inputSchema: {} }, async (_args, extra) => {
    extra.closeStandaloneSSEStream?.();
    grown += 1;
    server.registerTool(`grown-${grown}`, { inputSchema: {} }, async () => ({ content: [{ type: "text", text: "new" }] }));
    return { content: [{ type: "text", text: "GET stream closed" }] };
  });
  server.registerTool("forget", { inputSchema: {} }, async (_args, extra) => {
    transports.delete(extra.sessionId);
    return { content: [{ type: "text", text: "forgotten" }] };
  });
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
      eventStore: new EventStore(),
      retryInterval: 200,
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
