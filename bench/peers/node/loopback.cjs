// Preloaded into a Node peer (`node -r loopback.cjs ...`) that listens on
// every interface when given only a port (supergateway): its servers listen
// on 127.0.0.1 instead, so a benchmark never opens a port to the network.
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  const portOnly = typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first));
  if (portOnly && typeof args[1] !== "string") {
    return listen.call(this, Number(first), "127.0.0.1", ...args.slice(1));
  }
  if (first && typeof first === "object" && first.port !== undefined && first.host === undefined) {
    return listen.call(this, { ...first, host: "127.0.0.1" }, ...args.slice(1));
  }
  return listen.apply(this, args);
};
