# A model for the scripts of testdata/npm. Asked "call: A B …", it calls
# the tools *__A, *__B, … one per step, then says what each answered, one
# a line; a word NAME@S waits S seconds before the call, NAME@PATH until
# PATH exists, NAME@PATH#TEXT until PATH holds TEXT (a minute at most),
# NAME:JSON (no spaces) gives its arguments, else {"message": "again"}. Asked
# "context?", it says the system prompt; anything else, it repeats.
import json, os, sys, time

def send(m):
    sys.stdout.write(json.dumps(dict(m, jsonrpc="2.0")) + "\n")
    sys.stdout.flush()

def say(sid, text):
    send({"method": "provider/delta", "params": {"streamId": sid, "event": {"kind": "text", "text": text}}})

for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(line)
    if m.get("method") == "initialize":
        send({"id": m["id"], "result": {"protocol": 5, "name": "scripted-model", "version": "1", "providers": [{"id": "model"}]}})
    elif m.get("method") == "provider/stream":
        p = m["params"]
        sid, req = p["streamId"], p["request"]
        msgs = req["messages"]
        first = [x for x in msgs if x["role"] == "user"][-1]["content"]
        end = "end_turn"
        if first.startswith("call: "):
            wanted = first[len("call: "):].split()
            done = [x["content"] for x in msgs if x["role"] == "tool"]
            if len(done) < len(wanted):
                word, _, args = wanted[len(done)].partition(":")
                name, _, wait = word.partition("@")
                if wait.startswith("/"):
                    path, _, text = wait.partition("#")
                    for _ in range(600):
                        if os.path.exists(path) and (not text or text in open(path, errors="replace").read()):
                            break
                        time.sleep(0.1)
                else:
                    time.sleep(float(wait or 0))
                names = [t["name"] for t in req.get("tools", []) if t["name"].endswith("__" + name)]
                if names:
                    send({"method": "provider/delta", "params": {"streamId": sid, "event": {"kind": "toolCall",
                          "toolCall": {"index": 0, "id": "c%d" % len(done), "name": names[0], "argumentsDelta": args or json.dumps({"message": "again"})}}}})
                    end = "tool_use"
                else:
                    say(sid, "no tool " + name)
            else:
                say(sid, "\n".join("answered: " + d for d in done))
        elif msgs[-1]["content"] == "context?":
            say(sid, "system: " + req.get("system", ""))
        else:
            say(sid, "you said: " + msgs[-1]["content"])
        send({"id": m["id"], "result": {"end": {"stopReason": end}}})
