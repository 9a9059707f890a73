#!/usr/bin/env python3
"""{{.Name}}: a bingo plugin. The wire is JSON-RPC 2.0, one message a line, on
stdin and stdout; stderr is the plugin's log. See README.md."""
import json
import sys

PROTOCOL = 5
NAME = "{{.Name}}"
VERSION = "0.1.0"
WORDS = ["hello", "help", "world"]


def log(*args):
    print(NAME + ":", *args, file=sys.stderr, flush=True)


def send(msg):
    # Stdout is the wire and nothing else: one compact JSON line, then flush.
    sys.stdout.write(json.dumps(dict(msg, jsonrpc="2.0"), separators=(",", ":")) + "\n")
    sys.stdout.flush()


def declaration():
    return {
        "protocol": PROTOCOL, "name": NAME, "version": VERSION,
        "tools": [{
            "name": "greet",
            "description": "Greets someone by name.",
            "inputSchema": {"type": "object",
                            "properties": {"name": {"type": "string", "description": "who to greet"}},
                            "required": ["name"]},
        }],
        "commands": [{
            "name": NAME, "hint": "greet someone",
            "args": {"kind": "free", "hint": "<name>"}, "instant": True, "family": "plugin",
        }],
    }


def text(s, is_error=False):
    out = {"parts": [{"type": "text", "text": s}]}
    if is_error:
        out["isError"] = True
    return out


def handle(method, params):
    """Returns the result of a request: every answer carries its wrapper."""
    if method == "initialize":
        return declaration()
    if method == "tool/call":
        if params.get("name") != "greet":
            raise LookupError("no such tool: %s" % params.get("name"))
        who = (params.get("input") or {}).get("name")
        if not isinstance(who, str) or not who:
            return {"output": text("greet: name must be a non-empty string", True)}
        return {"output": text("Hello, %s!" % who)}
    if method == "command/run":
        args = params.get("args", "").strip()
        if not args:
            return {"outcome": {"kind": "error", "message": "usage: /%s <name>" % NAME}}
        return {"outcome": {"kind": "text", "text": "Hello, %s!" % args}}
    if method == "command/complete":
        partial = params.get("partial", "")
        return {"completions": [{"value": w} for w in WORDS if w.startswith(partial)]}
    raise NotImplementedError(method)


def main():
    log("started (protocol %d)" % PROTOCOL)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            log("skipped a line that is not JSON")
            continue
        if "id" not in msg or "method" not in msg:
            continue  # a notification (tool/cancel, …) or an answer: nothing to do
        try:
            send({"id": msg["id"], "result": handle(msg["method"], msg.get("params") or {})})
        except NotImplementedError:
            send({"id": msg["id"], "error": {"code": -32601, "message": "method not found: " + msg["method"]}})
        except LookupError as e:
            send({"id": msg["id"], "error": {"code": -32602, "message": str(e)}})


if __name__ == "__main__":
    main()
