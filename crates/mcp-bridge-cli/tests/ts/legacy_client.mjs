// A legacy (2025-11-25) client built with the TypeScript SDK 1.x, as VS Code
// is: starts the given stdio server command, runs a session, and prints what
// it saw as one JSON object.
//
// Usage: TS_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk node legacy_client.mjs MODE CMD [ARGS...]
// MODE: "example" (the example server behind the bridge), "input" (its
// elicitation and sampling tools, answered by this client's handlers),
// "notify" (a resource subscription and a tool list change), "everything"
// (server-everything, a 2025-11-25 server: calls, its elicitation and
// sampling, progress, a subscription, a cancellation), "python" (a Python
// server) or "gateway" (`mcp-bridge --config` in front of the example
// server as "notes", server-everything as "everything" and the Python
// server as "python": calls to each, the input requests of both eras,
// progress, prompts and resources, then the process whose environment
// holds GATEWAY_MARK killed).
import { pathToFileURL } from "node:url";

const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(pathToFileURL(`${sdk}/dist/esm/client/index.js`).href);
const { StdioClientTransport } = await import(pathToFileURL(`${sdk}/dist/esm/client/stdio.js`).href);
const { ElicitRequestSchema, CreateMessageRequestSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } =
  await import(pathToFileURL(`${sdk}/dist/esm/types.js`).href);

const [mode, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const asked = mode === "input" || mode === "everything" || mode === "gateway";
const capabilities = asked ? { elicitation: {}, sampling: {} } : {};
const client = new Client({ name: "ts-legacy-client", version: "1.0.0" }, { capabilities });
const out = {};
if (asked) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    out.elicitMessage = request.params.message;
    (out.elicitMessages ??= []).push(request.params.message);
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
} else if (mode === "gateway") {
  const texts = (result) => result.content.map((c) => c.text ?? "").join("\n");
  out.sum = texts(await client.callTool({ name: "notes__add", arguments: { a: 19, b: 23 } }));
  out.pySum = texts(await client.callTool({ name: "python__add", arguments: { a: 40, b: 2 } }));
  out.echo = texts(await client.callTool({ name: "everything__echo", arguments: { message: "hi" } }));
  // Input requests: the Python server's (of the era it speaks with the
  // bridge), server-everything's mid-call requests (2025-11-25).
  out.greeted = texts(await client.callTool({ name: "python__greet", arguments: {} }));
  out.elicited = texts(await client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} }));
  out.sampled = texts(
    await client.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "how long?" } }),
  );
  out.hello = texts(await client.callTool({ name: "notes__ask_name", arguments: {} }));
  const progress = [];
  await client.callTool({ name: "everything__trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  out.progress = progress;
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
  const prompt = await client.getPrompt({ name: "notes__greet", arguments: { name: "Ada", style: "formal" } });
  out.prompt = prompt.messages[0].content.text;
  out.resources = (await client.listResources()).resources.map((r) => r.uri).sort();
  out.readme = (await client.readResource({ uri: "example://readme" })).contents[0].text;

  // One server dies: its tools vanish (the client hears it), the rest work on.
  const { readdirSync, readFileSync } = await import("node:fs");
  const marked = readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/environ`).toString().split("\0").includes(process.env.GATEWAY_MARK);
    } catch {
      return false;
    }
  });
  out.marked = marked.length;
  let changed;
  const heard = () => new Promise((resolve) => (changed = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed?.());
  let next = heard();
  process.kill(Number(marked[0]), "SIGKILL");
  for (;;) {
    await next;
    next = heard();
    const names = (await client.listTools()).tools.map((t) => t.name);
    if (!names.some((n) => n.startsWith("notes__"))) {
      out.afterKill = names.sort();
      break;
    }
  }
  out.stillPy = texts(await client.callTool({ name: "python__add", arguments: { a: 1, b: 1 } }));
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
