#!/usr/bin/env node
// {{.Name}}: a bingo plugin. The wire is JSON-RPC 2.0, one message a line, on
// stdin and stdout; stderr is the plugin's log. See README.md.
"use strict";
const readline = require("node:readline");

const PROTOCOL = 5;
const NAME = "{{.Name}}";
const VERSION = "0.1.0";
const WORDS = ["hello", "help", "world"];

const log = (...args) => console.error(NAME + ":", ...args);

// Stdout is the wire and nothing else: never console.log.
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");

const declaration = () => ({
  protocol: PROTOCOL, name: NAME, version: VERSION,
  tools: [{
    name: "greet",
    description: "Greets someone by name.",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "who to greet" } },
      required: ["name"],
    },
  }],
  commands: [{
    name: NAME, hint: "greet someone",
    args: { kind: "free", hint: "<name>" }, instant: true, family: "plugin",
  }],
});

const text = (s, isError) => {
  const out = { parts: [{ type: "text", text: s }] };
  if (isError) out.isError = true;
  return out;
};

class RPCError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

// handle returns the result of a request: every answer carries its wrapper.
function handle(method, params) {
  switch (method) {
    case "initialize":
      return declaration();
    case "tool/call": {
      if (params.name !== "greet") throw new RPCError(-32602, "no such tool: " + params.name);
      const who = (params.input || {}).name;
      if (typeof who !== "string" || who === "") return { output: text("greet: name must be a non-empty string", true) };
      return { output: text(`Hello, ${who}!`) };
    }
    case "command/run": {
      const args = (params.args || "").trim();
      if (!args) return { outcome: { kind: "error", message: `usage: /${NAME} <name>` } };
      return { outcome: { kind: "text", text: `Hello, ${args}!` } };
    }
    case "command/complete": {
      const partial = params.partial || "";
      return { completions: WORDS.filter((w) => w.startsWith(partial)).map((value) => ({ value })) };
    }
  }
  throw new RPCError(-32601, "method not found: " + method);
}

log(`started (protocol ${PROTOCOL})`);
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    log("skipped a line that is not JSON");
    return;
  }
  if (msg.id === undefined || !msg.method) return; // a notification (tool/cancel, …) or an answer
  try {
    send({ id: msg.id, result: handle(msg.method, msg.params || {}) });
  } catch (e) {
    send({ id: msg.id, error: { code: e.code || -32603, message: e.message } });
  }
});
rl.on("close", () => process.exit(0)); // stdin at EOF: the host is done
