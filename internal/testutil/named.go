package testutil

// NamedPlugin is the smallest honest Python plugin, for start-up
// benchmarks: it answers the handshake under the name its manifest gives
// it (its first argument), declaring a tool and a command of that name,
// answers the command's completion, and exits when stdin ends.
const NamedPlugin = `import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocol": 5, "name": sys.argv[1], "version": "1",
              "tools": [{"name": "t", "description": "t", "inputSchema": {"type": "object"}}],
              "commands": [{"name": sys.argv[1], "args": {"kind": "free"}}]}}), flush=True)
    elif m.get("method") == "command/complete":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"completions": [{"value": "done"}]}}), flush=True)
`
