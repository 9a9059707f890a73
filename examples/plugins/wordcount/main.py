#!/usr/bin/env python3
"""wordcount: a bingo plugin in Python 3, standard library only.

It contributes one tool (count) and one command (/wordcount). The whole
wire is here: JSON-RPC 2.0, one message per line, on stdin and stdout.
Stdout carries messages and nothing else; anything else goes to stderr,
which the host writes to the plugin's log. See README.md for the contract.
"""

import errno
import json
import os
import re
import stat
import sys

PROTOCOL = 5  # the protocol the host speaks; answer it whatever we are sent
WHITESPACE = " \t\n\r\v\f"  # what separates words: ASCII only, no surprises

# The contract's read failures. The language's own error text never reaches
# the wire: it differs between Python, Go and platforms.
REASONS = {
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "no such file or directory",
    errno.EISDIR: "is a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def log(text):
    """Say something to the plugin's log (stderr), never to the wire."""
    print("wordcount: %s" % text, file=sys.stderr, flush=True)


# --- the wire -------------------------------------------------------------

# Bytes of a file name that are not UTF-8 (os.scandir gives them as lone
# surrogates) go out as \ufffd, and U+2028 and U+2029 are escaped: that is
# what Go's encoding/json writes, so the Go build of this plugin answers the
# same bytes.
ESCAPES = {"\u2028": "\\u2028", "\u2029": "\\u2029"}


def send(message):
    """Write one message as one line of compact JSON, and flush it."""
    line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    line = re.sub("[\ud800-\udfff\u2028\u2029]", lambda m: ESCAPES.get(m.group(), "\\ufffd"), line)
    sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def fail(request_id, code, message):
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


def clean(value):
    """Replace lone surrogates (from invalid UTF-8 or a bad \\ud800 escape)
    by U+FFFD, as a Go decoder would."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


class InvalidParams(Exception):
    """Becomes the JSON-RPC error -32602."""


# The refusals are worded as Go's pluginkit words them (the Go build of this
# plugin is served by it), so the two answer a bad request alike: the
# plugin's name, then what is wrong, a name quoted.

def quoted(name):
    """name in double quotes, escaped as JSON does: as Go's %q writes a name
    of printable characters."""
    return json.dumps(name, ensure_ascii=False)


def fields(params, *names):
    """The named string fields of a request's params, "" when absent or null.
    Any other type is invalid params; the first bad field is the one named."""
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise InvalidParams("wordcount: bad params: params must be an object")
    for key, value in params.items():
        if key in names and value is not None and not isinstance(value, str):
            raise InvalidParams("wordcount: bad params: %s must be a string" % key)
    return [params.get(name) or "" for name in names]


# --- what the plugin does ------------------------------------------------

def handshake():
    return {
        "protocol": PROTOCOL,
        "name": "wordcount",
        "version": "0.1.0",
        "tools": [{
            "name": "count",
            "description": "Counts the words, lines and characters in a file.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {
                    "type": "string",
                    "description": "The file to count: relative to the working directory, or absolute.",
                }},
                "required": ["path"],
            },
        }],
        "commands": [{
            "name": "wordcount",
            "hint": "count the words in a file",
            "args": {"kind": "free", "hint": "<path>"},
            "instant": True,
            "family": "plugin",
        }],
    }


class CannotRead(Exception):
    def __init__(self, path, reason):
        super().__init__("wordcount: cannot read %s: %s" % (path, reason))


def read(cwd, path):
    """The bytes of the file at path (relative to cwd unless absolute).
    Stat first, so a directory or a FIFO is refused by kind, not read."""
    full = os.path.join(cwd, path) if cwd else path
    try:
        mode = os.stat(full).st_mode
        if stat.S_ISDIR(mode):
            raise CannotRead(path, "is a directory")
        if not stat.S_ISREG(mode):
            raise CannotRead(path, "not a regular file")
        with open(full, "rb") as f:
            return f.read()
    except OSError as e:
        raise CannotRead(path, REASONS.get(e.errno, "read failed")) from e
    except ValueError as e:  # a NUL byte in the path
        raise CannotRead(path, "read failed") from e


def count(data):
    """Lines, words, chars and bytes of data, exactly as the contract says."""
    lines = data.count(b"\n")
    if data and not data.endswith(b"\n"):
        lines += 1  # a last line without its newline still counts
    words = len(data.split())  # bytes.split() splits on the six ASCII spaces
    chars = len(data.decode("utf-8", "surrogateescape"))  # a bad byte is one char
    return lines, words, chars, len(data)


def table(path, counts):
    """The View the person sees: the tool's display and the command's view."""
    return {
        "kind": "table",
        "title": "wordcount",
        "columns": ["file", "lines", "words", "chars", "bytes"],
        "rows": [[path] + [str(n) for n in counts]],
    }


def call_tool(params):
    call_id, name, cwd = fields(params, "callId", "name", "cwd")
    if name != "count":
        raise InvalidParams("wordcount: no tool %s" % quoted(name))
    given = params.get("input")
    path = given.get("path") if isinstance(given, dict) else None
    if not isinstance(path, str) or not path:
        return {"parts": [{"type": "text", "text": "wordcount: path is required"}], "isError": True}
    # Progress is a notification, sent while the call runs: the surface
    # shows it as the call's live output line.
    notify("tool/progress", {"callId": call_id, "tail": "reading %s" % path})
    try:
        counts = count(read(cwd, path))
    except CannotRead as e:  # the tool's own failure: an output the model reads
        return {"parts": [{"type": "text", "text": str(e)}], "isError": True}
    said = "%s: %d lines, %d words, %d characters, %d bytes" % ((path,) + counts)
    return {"parts": [{"type": "text", "text": said}], "display": table(path, counts)}


def run_command(params):
    name, args, cwd = fields(params, "name", "args", "cwd")
    if name != "wordcount":
        raise InvalidParams("wordcount: no command %s" % quoted(name))
    path = args.strip(WHITESPACE)  # args is the rest of the line, as typed
    if not path:
        return {"kind": "error", "message": "usage: /wordcount <path>"}
    try:
        counts = count(read(cwd, path))
    except CannotRead as e:
        return {"kind": "error", "message": str(e)}
    return {"kind": "view", "view": table(path, counts)}


def complete(params):
    """The entries of the directory partial names that start with what
    follows its last "/"; a directory ends in "/", and hidden names show
    only once a "." is typed."""
    name, partial, cwd = fields(params, "name", "partial", "cwd")
    if name != "wordcount":
        raise InvalidParams("wordcount: no command %s" % quoted(name))
    cut = partial.rfind("/") + 1
    folder, prefix = partial[:cut], partial[cut:]
    where = os.path.join(cwd, folder) if folder else cwd
    found = []
    try:
        with os.scandir(where) as entries:
            for e in entries:
                if e.name.startswith(prefix) and (prefix.startswith(".") or not e.name.startswith(".")):
                    slash = "/" if e.is_dir() else ""  # follows a symbolic link
                    found.append((os.fsencode(e.name), folder + e.name + slash))
    except (OSError, ValueError):
        return []  # an unreadable directory completes to nothing
    return [{"value": value} for _, value in sorted(found)]  # byte order of the names


# --- the loop ------------------------------------------------------------

METHODS = {
    "tool/call": lambda params: {"output": call_tool(params)},
    "command/run": lambda params: {"outcome": run_command(params)},
    "command/complete": lambda params: {"completions": complete(params)},
}


initialized = False  # the handshake comes first, and once


def handle(message):
    global initialized
    method = message.get("method")
    if not isinstance(method, str) or "id" not in message:
        return  # a notification (tool/cancel, ...) or a response: nothing to answer
    request_id, params = message["id"], message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        log("skipped a request whose id is neither a string nor an integer")
        return
    if method == "initialize":
        if initialized:
            fail(request_id, -32600, "wordcount: already initialized")
            return
        initialized = True
        asked = params.get("protocol") if isinstance(params, dict) else None
        if asked != PROTOCOL:  # answer 5 anyway: refusing is the host's call
            log("host asked for protocol %s; answering %d" % (asked, PROTOCOL))
        answer(request_id, handshake())
    elif not initialized:
        fail(request_id, -32600, "wordcount: %s before initialize" % method)
    elif method in METHODS:
        try:
            answer(request_id, METHODS[method](params))
        except InvalidParams as e:
            fail(request_id, -32602, str(e))
    else:
        fail(request_id, -32601, "wordcount: no method %s" % quoted(method))


def main():
    log("started (protocol %d)" % PROTOCOL)
    for raw in sys.stdin.buffer:  # one message per line, until EOF
        if not raw.strip():
            continue
        try:
            # Bytes that are not UTF-8 become U+FFFD, one each, as in Go.
            message = clean(json.loads(raw.decode("utf-8", "surrogateescape")))
        except (ValueError, RecursionError) as e:
            log("skipped a line that is not JSON: %s" % e)
            continue
        if not isinstance(message, dict):
            log("skipped a line that is not a JSON-RPC message")
            continue
        handle(message)
    return 0  # stdin ended: the host is done with us


if __name__ == "__main__":
    sys.exit(main())
