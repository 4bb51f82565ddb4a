// A legacy (2025-11-25) client built with the TypeScript SDK 1.x, as VS Code
// is: starts the given stdio server command, runs a session, and prints what
// it saw as one JSON object.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node legacy_client.mjs MODE CMD [ARGS...]
// MODE: "example" (the example server behind the bridge), "input" (its
// elicitation and sampling tools, answered by this client's handlers),
// "notify" (a resource subscription and a tool list change), "everything"
// (server-everything, a 2025-11-25 server: calls, its elicitation and
// sampling, progress, a subscription, a cancellation) or "python" (a Python
// server).
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(pathToFileURL(`${sdk}/dist/esm/client/index.js`).href);
const { StdioClientTransport } = await import(pathToFileURL(`${sdk}/dist/esm/client/stdio.js`).href);
const { ElicitRequestSchema, CreateMessageRequestSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } =
  await import(pathToFileURL(`${sdk}/dist/esm/types.js`).href);

const [mode, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const asked = mode === "input" || mode === "everything";
const capabilities = asked ? { elicitation: {}, sampling: {} } : {};
const client = new Client({ name: "ts-legacy-client", version: "1.0.0" }, { capabilities });
const out = {};
if (asked) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    out.elicitMessage = request.params.message;
    return { action: "accept", content: { name: "TypeScript" } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    out.samplingPrompt = request.params.messages[0].content.text;
    return { role: "assistant", content: { type: "text", text: "it is short" }, model: "ts-model" };
  });
}
await client.connect(transport);
out.server = client.getServerVersion();
out.protocolVersion = transport._protocolVersion ?? null;
out.capabilities = client.getServerCapabilities();
const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name).sort();

if (mode === "example") {
  const sum = await client.callTool({ name: "add", arguments: { a: 19, b: 23 } });
  out.sum = sum.content[0].text;
  out.sumStructured = sum.structuredContent;

  const progress = [];
  const slow = await client.callTool({ name: "slow", arguments: { steps: 3, step_ms: 50 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  out.slow = slow.content[0].text;
  out.progress = progress;

  const controller = new AbortController();
  let sawProgress = false;
  try {
    await client.callTool({ name: "slow", arguments: { steps: 100, step_ms: 100 } }, undefined, {
      signal: controller.signal,
      onprogress: () => {
        if (!sawProgress) {
          sawProgress = true;
          controller.abort("user pressed stop");
        }
      },
    });
    out.cancelled = false;
  } catch (e) {
    out.cancelled = true;
  }
  // The connection still works after the cancellation.
  out.afterCancel = (await client.callTool({ name: "echo", arguments: { text: "still here" } })).content[0].text;

  const prompts = await client.listPrompts();
  out.prompts = prompts.prompts.map((p) => p.name);
  const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada", style: "formal" } });
  out.prompt = prompt.messages[0].content.text;
  const resources = await client.listResources();
  out.resources = resources.resources.map((r) => r.uri).sort();
  const templates = await client.listResourceTemplates();
  out.templates = templates.resourceTemplates.map((t) => t.uriTemplate);
  const readme = await client.readResource({ uri: "example://readme" });
  out.readme = readme.contents[0].text;
  const logo = await client.readResource({ uri: "example://logo.png" });
  out.logoMime = logo.contents[0].mimeType;
  const completion = await client.complete({ ref: { type: "ref/resource", uri: "note://{name}" }, argument: { name: "name", value: "sh" } });
  out.completion = completion.completion.values;
} else if (mode === "notify") {
  const updated = new Promise((resolve) =>
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === "note://shopping") resolve(n.params.uri);
    }),
  );
  const toolsChanged = new Promise((resolve) =>
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true)),
  );
  const within = (promise) =>
    Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error("no notification")), 5000))]);
  await client.subscribeResource({ uri: "note://shopping" });
  await client.callTool({ name: "set_note", arguments: { name: "shopping", text: "apples" } });
  out.updated = await within(updated);
  await client.callTool({ name: "toggle_bonus", arguments: {} });
  out.toolsChanged = await within(toolsChanged);
  out.toolsAfter = (await client.listTools()).tools.map((t) => t.name).includes("bonus");
} else if (mode === "everything") {
  out.echo = (await client.callTool({ name: "echo", arguments: { message: "hi" } })).content[0].text;
  const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  out.elicited = elicited.content.map((c) => c.text ?? "").join("\n");
  const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "how long?" } });
  out.sampled = sampled.content.map((c) => c.text ?? "").join("\n");
  const progress = [];
  await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  out.progress = progress;
  const uri = "demo://resource/dynamic/text/1";
  const updated = new Promise((resolve) =>
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === uri) resolve(n.params.uri);
    }),
  );
  await client.subscribeResource({ uri });
  await client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
  out.updated = await Promise.race([
    updated,
    new Promise((_, reject) => setTimeout(() => reject(new Error("no resource update")), 10000)),
  ]);
  const controller = new AbortController();
  const slow = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } }, undefined, {
    signal: controller.signal,
    onprogress: () => controller.abort("user pressed stop"),
  });
  out.cancelled = await slow.then(() => false, () => true);
  out.afterCancel = (await client.callTool({ name: "echo", arguments: { message: "after" } })).content[0].text;
} else if (mode === "input") {
  out.hello = (await client.callTool({ name: "ask_name", arguments: {} })).content[0].text;
  out.summary = (await client.callTool({ name: "summarize", arguments: { text: "a long story" } })).content[0].text;
} else {
  const sum = await client.callTool({ name: "add", arguments: { a: 40, b: 2 } });
  out.sum = sum.content[0].text;
  const shout = await client.callTool({ name: "shout", arguments: { text: "bridge" } });
  out.shout = shout.content[0].text;
}
await client.close();
console.log(JSON.stringify(out));
