// Preloaded into a Node.js server under test (`node -r loopback.cjs ...`):
// a listen without a host binds 127.0.0.1 instead of every interface, and
// the port bound is written to stderr as `LISTENING <port>`, so a server
// started with PORT=0 can be found. For peers such as server-everything,
// whose `app.listen(PORT)` has no host option.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first));
  if (isPort && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && first.host === undefined && first.path === undefined) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") process.stderr.write(`LISTENING ${address.port}\n`);
  });
  return listen.apply(this, args);
};
