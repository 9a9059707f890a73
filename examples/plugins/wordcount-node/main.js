#!/usr/bin/env node
// wordcount: a bingo plugin in Node.js (20 or later), no dependencies.
//
// The same plugin as ../wordcount/main.py, answering every request with the
// same bytes but its name (NAME, its directory's, as the host wants): one
// tool (count) and one command (/wordcount). JSON-RPC 2.0,
// one message per line, on stdin and stdout. Stdout carries messages and
// nothing else; anything else goes to stderr, the plugin's log. The contract
// is ../wordcount/README.md.
"use strict";

const fs = require("node:fs");

const NAME = "wordcount-node"; // the manifest's name, which every message starts with
const PROTOCOL = 5; // the protocol the host speaks; answer it whatever we are sent
const WHITESPACE = " \t\n\r\v\f"; // what separates words: ASCII only, no surprises

// The contract's read failures. Node's own error text never reaches the wire.
const REASONS = {
  ENOENT: "no such file or directory",
  ENOTDIR: "no such file or directory",
  EISDIR: "is a directory",
  EACCES: "permission denied",
  EPERM: "permission denied",
};

function log(text) {
  process.stderr.write(`${NAME}: ${text}\n`);
}

// --- bytes and text ------------------------------------------------------

// decode is UTF-8 decoding where every byte that is not part of a valid
// sequence becomes its own lone surrogate U+DC80+byte (Python's
// "surrogateescape"). Node's own decoder folds a bad sequence into one
// U+FFFD; the contract wants one replacement (and one character) per byte.
function decode(buf) {
  let out = "";
  let i = 0;
  const n = buf.length;
  while (i < n) {
    const b = buf[i];
    if (b < 0x80) {
      out += String.fromCharCode(b);
      i++;
      continue;
    }
    let need = 0;
    let cp = 0;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      cp = b & 0x0f;
      if (b === 0xe0) lo = 0xa0; // no overlong forms
      if (b === 0xed) hi = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      cp = b & 0x07;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f; // nothing past U+10FFFF
    }
    let ok = need > 0 && i + need < n;
    for (let k = 1; ok && k <= need; k++) {
      const c = buf[i + k];
      const first = k === 1;
      if (c < (first ? lo : 0x80) || c > (first ? hi : 0xbf)) ok = false;
      else cp = (cp << 6) | (c & 0x3f);
    }
    if (!ok) {
      out += String.fromCharCode(0xdc00 + b);
      i++;
      continue;
    }
    out += String.fromCodePoint(cp);
    i += need + 1;
  }
  return out;
}

// The number of characters (code points) of a decoded string: an escaped
// byte is a lone low surrogate, so it never pairs and counts one.
function codePoints(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

const SURROGATE = /[\ud800-\udfff]/gu; // with "u", a lone surrogate matches; a pair does not

// clean replaces lone surrogates (from bytes that are not UTF-8, or a bad
// \ud800 escape) by U+FFFD, as a Go decoder would.
function clean(value) {
  if (typeof value === "string") return value.replace(SURROGATE, "\ufffd");
  if (Array.isArray(value)) return value.map(clean);
  if (isObject(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[clean(k)] = clean(v);
    return out;
  }
  return value;
}

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// --- the wire -------------------------------------------------------------

// Bytes of a file name that are not UTF-8 (decode gives them as lone
// surrogates, which JSON.stringify writes as \udcXX) go out as \ufffd, and
// U+2028 and U+2029 are escaped: that is what Go's encoding/json writes,
// and what main.py writes. An escaped backslash is matched as a whole, so
// its second half never starts an escape.
function send(message) {
  const line = JSON.stringify(message).replace(/\\(?:\\|ud[89a-f][0-9a-f]{2})|[\u2028\u2029]/g, (m) => {
    if (m === "\u2028") return "\\u2028";
    if (m === "\u2029") return "\\u2029";
    return m === "\\\\" ? m : "\\ufffd";
  });
  process.stdout.write(line + "\n");
}

function answer(id, result) {
  send({ jsonrpc: "2.0", id, result });
}

function fail(id, code, message) {
  send({ jsonrpc: "2.0", id, error: { code, message } });
}

function notify(method, params) {
  send({ jsonrpc: "2.0", method, params });
}

class InvalidParams extends Error {} // becomes the JSON-RPC error -32602

// The refusals are worded as Go's pluginkit words them (main.py does too):
// the plugin's name, then what is wrong, a name quoted.

// name in double quotes, escaped as JSON does: as Go's %q writes a name of
// printable characters.
function quoted(name) {
  return JSON.stringify(name);
}

// The named string fields of a request's params, "" when absent or null.
// Any other type is invalid params; the first bad field is the one named.
function fields(params, ...names) {
  params = params === null || params === undefined ? {} : params;
  if (!isObject(params)) throw new InvalidParams(`${NAME}: bad params: params must be an object`);
  for (const [key, value] of Object.entries(params)) {
    if (names.includes(key) && value !== null && typeof value !== "string") {
      throw new InvalidParams(`${NAME}: bad params: ${key} must be a string`);
    }
  }
  return names.map((name) => (Object.hasOwn(params, name) && params[name]) || "");
}

// --- what the plugin does ------------------------------------------------

function handshake() {
  return {
    protocol: PROTOCOL,
    name: NAME,
    version: "0.1.0",
    tools: [{
      name: "count",
      description: "Counts the words, lines and characters in a file.",
      inputSchema: {
        type: "object",
        properties: { path: {
          type: "string",
          description: "The file to count: relative to the working directory, or absolute.",
        } },
        required: ["path"],
      },
    }],
    commands: [{
      name: "wordcount",
      hint: "count the words in a file",
      args: { kind: "free", hint: "<path>" },
      instant: true,
      family: "plugin",
    }],
  };
}

class CannotRead extends Error {
  constructor(path, reason) {
    super(`${NAME}: cannot read ${path}: ${reason}`);
  }
}

// join is Python's os.path.join(a, b) for two parts: an absolute b wins.
function join(a, b) {
  if (b.startsWith("/") || a === "") return b;
  return a.endsWith("/") ? a + b : a + "/" + b;
}

// The bytes of the file at path (relative to cwd unless absolute). Stat
// first, so a directory or a FIFO is refused by kind, not read.
function read(cwd, path) {
  const full = cwd ? join(cwd, path) : path;
  if (full.includes("\0")) throw new CannotRead(path, "read failed");
  try {
    const st = fs.statSync(full);
    if (st.isDirectory()) throw new CannotRead(path, "is a directory");
    if (!st.isFile()) throw new CannotRead(path, "not a regular file");
    return fs.readFileSync(full);
  } catch (e) {
    if (e instanceof CannotRead) throw e;
    throw new CannotRead(path, REASONS[e.code] || "read failed");
  }
}

function isSpace(b) {
  return b === 0x20 || (b >= 0x09 && b <= 0x0d);
}

// Lines, words, chars and bytes of data, exactly as the contract says.
function count(data) {
  let lines = 0;
  let words = 0;
  let inWord = false;
  for (let i = 0; i < data.length; i++) {
    const b = data[i];
    if (b === 0x0a) lines++;
    if (isSpace(b)) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  if (data.length > 0 && data[data.length - 1] !== 0x0a) lines++; // a last line without its newline still counts
  const chars = codePoints(decode(data)); // a bad byte is one char
  return [lines, words, chars, data.length];
}

// The View the person sees: the tool's display and the command's view.
function table(path, counts) {
  return {
    kind: "table",
    title: "wordcount",
    columns: ["file", "lines", "words", "chars", "bytes"],
    rows: [[path, ...counts.map(String)]],
  };
}

function callTool(params) {
  const [callId, name, cwd] = fields(params, "callId", "name", "cwd");
  if (name !== "count") throw new InvalidParams(`${NAME}: no tool ${quoted(name)}`);
  const given = params.input; // null params fail here, as they do in main.py
  const path = isObject(given) ? given.path : null;
  if (typeof path !== "string" || !path) {
    return { parts: [{ type: "text", text: `${NAME}: path is required` }], isError: true };
  }
  // Progress is a notification, sent while the call runs: the surface
  // shows it as the call's live output line.
  notify("tool/progress", { callId, tail: `reading ${path}` });
  let counts;
  try {
    counts = count(read(cwd, path));
  } catch (e) {
    if (!(e instanceof CannotRead)) throw e;
    return { parts: [{ type: "text", text: e.message }], isError: true };
  }
  const [l, w, c, b] = counts;
  const said = `${path}: ${l} lines, ${w} words, ${c} characters, ${b} bytes`;
  return { parts: [{ type: "text", text: said }], display: table(path, counts) };
}

function strip(s, chars) {
  let i = 0;
  let j = s.length;
  while (i < j && chars.includes(s[i])) i++;
  while (j > i && chars.includes(s[j - 1])) j--;
  return s.slice(i, j);
}

function runCommand(params) {
  const [name, args, cwd] = fields(params, "name", "args", "cwd");
  if (name !== "wordcount") throw new InvalidParams(`${NAME}: no command ${quoted(name)}`);
  const path = strip(args, WHITESPACE); // args is the rest of the line, as typed
  if (!path) return { kind: "error", message: "usage: /wordcount <path>" };
  let counts;
  try {
    counts = count(read(cwd, path));
  } catch (e) {
    if (!(e instanceof CannotRead)) throw e;
    return { kind: "error", message: e.message };
  }
  return { kind: "view", view: table(path, counts) };
}

// The entries of the directory partial names that start with what follows
// its last "/"; a directory ends in "/", and hidden names show only once a
// "." is typed.
function complete(params) {
  const [name, partial, cwd] = fields(params, "name", "partial", "cwd");
  if (name !== "wordcount") throw new InvalidParams(`${NAME}: no command ${quoted(name)}`);
  const cut = partial.lastIndexOf("/") + 1;
  const folder = partial.slice(0, cut);
  const prefix = partial.slice(cut);
  const where = folder ? join(cwd, folder) : cwd;
  if (where.includes("\0")) return [];
  const found = [];
  try {
    for (const raw of fs.readdirSync(where, { encoding: "buffer" })) {
      const entry = decode(raw); // bad bytes stay lone surrogates: they match no prefix
      if (entry.startsWith(prefix) && (prefix.startsWith(".") || !entry.startsWith("."))) {
        let dir = false;
        try {
          dir = fs.statSync(Buffer.concat([Buffer.from(join(where, "")), raw])).isDirectory(); // follows a symbolic link
        } catch {
          dir = false;
        }
        found.push([raw, folder + entry + (dir ? "/" : "")]);
      }
    }
  } catch {
    return []; // an unreadable directory completes to nothing
  }
  found.sort((a, b) => Buffer.compare(a[0], b[0])); // byte order of the names
  return found.map(([, value]) => ({ value }));
}

// --- the loop ------------------------------------------------------------

const METHODS = new Map([
  ["tool/call", (params) => ({ output: callTool(params) })],
  ["command/run", (params) => ({ outcome: runCommand(params) })],
  ["command/complete", (params) => ({ completions: complete(params) })],
]);

let initialized = false; // the handshake comes first, and once

function handle(message) {
  const method = message.method;
  if (typeof method !== "string" || !Object.hasOwn(message, "id")) {
    return; // a notification (tool/cancel, ...) or a response: nothing to answer
  }
  const id = message.id;
  const params = Object.hasOwn(message, "params") ? message.params : null;
  if (typeof id !== "string" && !Number.isInteger(id)) {
    log("skipped a request whose id is neither a string nor an integer");
    return;
  }
  if (method === "initialize") {
    if (initialized) {
      fail(id, -32600, `${NAME}: already initialized`);
      return;
    }
    initialized = true;
    const asked = isObject(params) && Object.hasOwn(params, "protocol") ? params.protocol : null;
    if (asked !== PROTOCOL) { // answer 5 anyway: refusing is the host's call
      log(`host asked for protocol ${JSON.stringify(asked)}; answering ${PROTOCOL}`);
    }
    answer(id, handshake());
  } else if (!initialized) {
    fail(id, -32600, `${NAME}: ${method} before initialize`);
  } else if (METHODS.has(method)) {
    let result;
    try {
      result = METHODS.get(method)(params);
    } catch (e) {
      if (!(e instanceof InvalidParams)) throw e;
      fail(id, -32602, e.message);
      return;
    }
    answer(id, result);
  } else {
    fail(id, -32601, `${NAME}: no method ${quoted(method)}`);
  }
}

function line(raw) {
  if (strip(raw.toString("latin1"), WHITESPACE) === "") return;
  let message;
  try {
    // Bytes that are not UTF-8 become U+FFFD, one each, as in Go.
    message = clean(JSON.parse(decode(raw)));
  } catch (e) {
    log(`skipped a line that is not JSON: ${e.message}`);
    return;
  }
  if (!isObject(message)) {
    log("skipped a line that is not a JSON-RPC message");
    return;
  }
  handle(message);
}

function main() {
  log(`started (protocol ${PROTOCOL})`);
  let pending = Buffer.alloc(0);
  process.stdin.on("data", (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl;
    while ((nl = pending.indexOf(0x0a)) >= 0) { // one message per line
      line(pending.subarray(0, nl + 1));
      pending = pending.subarray(nl + 1);
    }
  });
  process.stdin.on("end", () => { // stdin ended: the host is done with us
    if (pending.length) line(pending);
    process.exitCode = 0;
  });
}

main();
