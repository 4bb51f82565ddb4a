// A TypeScript SDK 1.x client (package folder in TS_SDK_DIR) that a test
// drives: it connects over stdio to the command given after its name
// (passing its whole environment on), answers form elicitations with its
// name, counts tools/list_changed, prints {"ready": true}, then runs one
// command per stdin line and prints one JSON answer per command:
//   {"op": "tools"}                          -> {"tools": [names]}
//   {"op": "call", "name": N, "arguments": A} -> {"text": T, "isError": B}
//   {"op": "changes"}                        -> {"changes": n}
// Usage: node driven_client.mjs NAME CMD [ARGS...]
import { pathToFileURL } from "node:url";
import readline from "node:readline";

const [name, command, ...args] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${process.env.TS_SDK_DIR}/${path}`).href);
const { Client } = await load("dist/esm/client/index.js");
const { StdioClientTransport } = await load("dist/esm/client/stdio.js");
const { ElicitRequestSchema, ToolListChangedNotificationSchema } = await load("dist/esm/types.js");

let changes = 0;
const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name } }));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes += 1;
});
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
const reply = (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`);
reply({ ready: true });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  try {
    if (command.op === "tools") {
      reply({ tools: (await client.listTools()).tools.map((tool) => tool.name) });
    } else if (command.op === "call") {
      const result = await client.callTool({ name: command.name, arguments: command.arguments ?? {} }, undefined, {
        timeout: 120000,
      });
      reply({ text: result.content?.[0]?.text ?? null, isError: Boolean(result.isError) });
    } else if (command.op === "changes") {
      reply({ changes });
    } else {
      reply({ error: `unknown op ${command.op}` });
    }
  } catch (error) {
    reply({ error: String(error?.message ?? error) });
  }
}
await client.close();
