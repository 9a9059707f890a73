#!/usr/bin/env python3
"""scripted-model: a model provider plugin with no model in it.

It stands in for a real model so that a turn can be shown and tested with
no network: asked "how many words are in FILE?", it calls the count tool
it is offered (any wordcount example's: plugin__wordcount__count,
plugin__wordcount-wasm__count, ...), then answers from the tool's result. Anything else, it says what it
can do. A real model comes from the built-in OpenAI-compatible provider
(settings: provider.openai) or from a plugin that calls one.

It shows the provider side of the wire: provider/stream answered with
provider/delta notifications (text, and a tool call whose arguments arrive
in pieces, as a real model's do), then the stream's end, which names the
model that answered; provider/cancel stops it. A request's maxTokens bounds
its text, a word being its token. Python 3, standard library only.
"""
import json
import re
import sys
import threading

out_lock = threading.Lock()
cancelled = set()
MODEL = "scripted-model-1"  # the model that answers, as the stream's end names it


def send(message):
    with out_lock:
        sys.stdout.write(json.dumps(dict(message, jsonrpc="2.0")) + "\n")
        sys.stdout.flush()


def delta(stream_id, event):
    if stream_id not in cancelled:
        send({"method": "provider/delta", "params": {"streamId": stream_id, "event": event}})


def answer(sid, text, max_tokens):
    """Says text, cut to max_tokens words when the request bounds it."""
    words = text.split(" ")
    if max_tokens and len(words) > max_tokens:
        delta(sid, {"kind": "text", "text": " ".join(words[:max_tokens])})
        return {"end": {"stopReason": "max_tokens", "model": MODEL}}
    delta(sid, {"kind": "text", "text": text})
    return {"end": {"stopReason": "end_turn", "model": MODEL}}


def stream(params):
    sid = params["streamId"]
    request = params["request"]
    messages = request["messages"]
    max_tokens = request.get("maxTokens", 0)
    last = messages[-1]
    if last["role"] == "tool":
        # Shown the tool's answer: summarise it.
        m = re.match(r"(.+): (\d+) lines, (\d+) words", last["content"])
        if m:
            text = "%s has %s words (in %s lines)." % (m.group(1), m.group(3), m.group(2))
        else:
            text = "The tool said: " + last["content"]
        return answer(sid, text, max_tokens)
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    m = re.search(r"words are in (\S+?)\??$", prompt.strip())
    tool = next((t["name"] for t in params["request"].get("tools", []) if t["name"].endswith("__count")), None)
    if m and tool is None:
        delta(sid, {"kind": "text", "text": "I have no count tool: install a wordcount example."})
        return {"end": {"stopReason": "end_turn"}}
    if not m:
        return answer(sid, 'I am a scripted model: ask me "how many words are in FILE?"', max_tokens)
    args = json.dumps({"path": m.group(1)})
    delta(sid, {"kind": "text", "text": "Let me count the words in %s.\n" % m.group(1)})
    half = len(args) // 2
    delta(sid, {"kind": "toolCall", "toolCall": {"index": 0, "id": "call_1", "name": tool, "argumentsDelta": args[:half]}})
    delta(sid, {"kind": "toolCall", "toolCall": {"index": 0, "argumentsDelta": args[half:]}})
    return {"end": {"stopReason": "tool_use", "model": MODEL}}


def main():
    print("scripted-model: started", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            print("scripted-model: not JSON: %r" % line, file=sys.stderr, flush=True)
            continue
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"id": mid, "result": {"protocol": 5, "name": "scripted-model", "version": "0.1.0",
                                        "providers": [{"id": "model", "description": "a scripted stand-in for a model"}]}})
        elif method == "provider/stream":
            send({"id": mid, "result": stream(msg["params"])})
        elif method == "provider/cancel":
            cancelled.add(msg["params"]["streamId"])
        elif mid is not None:
            send({"id": mid, "error": {"code": -32601, "message": "method not found: " + str(method)}})


if __name__ == "__main__":
    main()
