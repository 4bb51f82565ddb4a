#!/usr/bin/env node
// Runs the mcp-bridge binary of this machine's platform package, which npm
// installed as an optional dependency (the esbuild model: no install
// script, so `--ignore-scripts` changes nothing).
"use strict";

const { spawn } = require("node:child_process");
const { platforms } = require("./platforms.json");

const key = `${process.platform}-${process.arch}`;
const platformPackage = platforms[key];
if (!platformPackage) {
  console.error(`mcp-bridge: no build for ${key}; the builds are for ${Object.keys(platforms).join(", ")}`);
  process.exit(1);
}
const executable = process.platform === "win32" ? "mcp-bridge.exe" : "mcp-bridge";
let binary;
try {
  binary = require.resolve(`${platformPackage}/bin/${executable}`);
} catch {
  console.error(
    `mcp-bridge: the package ${platformPackage} is not installed; install mcp-bridge again without --omit=optional`,
  );
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
// The client stops the bridge with a signal to this process: pass it on.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
  console.error(`mcp-bridge: cannot start ${binary}: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  process.exit(signal ? 128 + (require("node:os").constants.signals[signal] ?? 0) : (code ?? 1));
});
