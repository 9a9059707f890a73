//! {{.Name}}: a bingo plugin in Rust, built to WebAssembly (WASI preview1)
//! and run in bingo's sandbox. The wire is JSON-RPC 2.0, one message a
//! line, on stdin and stdout; stderr is the plugin's log. See README.md.
//!
//! The module has one thread. A tool that works a while looks for
//! tool/cancel between its steps: it waits for input with poll (which
//! wakes as soon as a line comes) and reads stdin into its own buffer,
//! where it looks first: a line already read is invisible to poll.
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

const PROTOCOL: u64 = 5;
const NAME: &str = "{{.Name}}";
const VERSION: &str = "0.1.0";
const WORDS: [&str; 3] = ["hello", "help", "world"];
const STEP: Duration = Duration::from_millis(25);

// wasi-libc's poll and read: std's stdin reads ahead into a buffer that
// poll cannot see, so the plugin keeps its own.
#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
const POLLIN: i16 = 0x1;
extern "C" {
    fn poll(fds: *mut PollFd, nfds: usize, timeout: i32) -> i32;
    fn read(fd: i32, buf: *mut u8, count: usize) -> isize;
}

/// Stdin: what was read and not yet taken, and the lines put aside while
/// a tool worked.
struct Input {
    buf: Vec<u8>,
    later: VecDeque<Vec<u8>>,
    eof: bool,
}

impl Input {
    /// Reads what comes within wait (None: waits for it).
    fn fill(&mut self, wait: Option<Duration>) {
        if let Some(wait) = wait {
            let mut p = PollFd { fd: 0, events: POLLIN, revents: 0 };
            if unsafe { poll(&mut p, 1, wait.as_millis() as i32) } <= 0 {
                return;
            }
        }
        let mut chunk = [0u8; 65536];
        let n = unsafe { read(0, chunk.as_mut_ptr(), chunk.len()) };
        if n <= 0 {
            self.eof = true;
        } else {
            self.buf.extend_from_slice(&chunk[..n as usize]);
        }
    }

    /// The next whole line read, if there is one.
    fn line(&mut self) -> Option<Vec<u8>> {
        let i = self.buf.iter().position(|&b| b == b'\n')?;
        let rest = self.buf.split_off(i + 1);
        let mut line = std::mem::replace(&mut self.buf, rest);
        line.pop();
        Some(line)
    }

    /// The next message to handle, waiting for it; None at EOF.
    fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(line) = self.later.pop_front().or_else(|| self.line()) {
                return Some(line);
            }
            if self.eof {
                return None;
            }
            self.fill(None);
        }
    }

    /// Waits for d, and says whether tool/cancel came for call meanwhile
    /// (or stdin ended). Other lines are put aside for later.
    fn cancelled_within(&mut self, call: &Value, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if let Some(i) = self.later.iter().position(|l| is_cancel(l, call)) {
                self.later.remove(i);
                return true;
            }
            while let Some(line) = self.line() {
                if is_cancel(&line, call) {
                    return true;
                }
                self.later.push_back(line);
            }
            let now = Instant::now();
            if self.eof {
                return true;
            }
            if now >= end {
                return false;
            }
            self.fill(Some(end - now));
        }
    }
}

fn is_cancel(line: &[u8], call: &Value) -> bool {
    match serde_json::from_slice::<Value>(line) {
        Ok(m) => m["method"] == "tool/cancel" && &m["params"]["callId"] == call,
        Err(_) => false,
    }
}

/// Writes one message as one line of compact JSON, and flushes it: stdout
/// is the wire and nothing else.
fn send(mut msg: Value) {
    msg["jsonrpc"] = json!("2.0");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", msg);
    let _ = out.flush();
}

fn declaration() -> Value {
    json!({
        "protocol": PROTOCOL, "name": NAME, "version": VERSION,
        "tools": [{
            "name": "greet",
            "description": "Greets someone by name, in steps (one by default), each reported as progress.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "who to greet"},
                "steps": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "how many steps of 25 ms the greeting takes"}
            }, "required": ["name"]}
        }],
        "commands": [{
            "name": NAME, "hint": "greet someone",
            "args": {"kind": "free", "hint": "<name>"}, "instant": true, "family": "plugin"
        }]
    })
}

fn text(s: &str, is_error: bool) -> Value {
    let mut out = json!({"parts": [{"type": "text", "text": s}]});
    if is_error {
        out["isError"] = json!(true);
    }
    out
}

/// A method's answer: its result, or a JSON-RPC error (code, message).
fn handle(input: &mut Input, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "initialize" => Ok(declaration()),
        "tool/call" => {
            if params["name"] != "greet" {
                return Err((-32602, format!("no such tool: {}", params["name"])));
            }
            let who = match params["input"]["name"].as_str() {
                Some(w) if !w.is_empty() => w.to_string(),
                _ => return Ok(json!({"output": text("greet: name must be a non-empty string", true)})),
            };
            let steps = params["input"]["steps"].as_u64().unwrap_or(1).clamp(1, 1000);
            let call = &params["callId"];
            for step in 1..=steps {
                if step > 1 && input.cancelled_within(call, STEP) {
                    return Ok(json!({"output": text(&format!("greet: stopped at step {} of {}: cancelled", step, steps), true)}));
                }
                // Progress is a notification, sent while the call runs.
                send(json!({"method": "tool/progress", "params": {"callId": call, "tail": format!("step {} of {}", step, steps)}}));
            }
            Ok(json!({"output": text(&format!("Hello, {}!", who), false)}))
        }
        "command/run" => {
            let args = params["args"].as_str().unwrap_or("").trim();
            if args.is_empty() {
                return Ok(json!({"outcome": {"kind": "error", "message": format!("usage: /{} <name>", NAME)}}));
            }
            Ok(json!({"outcome": {"kind": "text", "text": format!("Hello, {}!", args)}}))
        }
        "command/complete" => {
            let partial = params["partial"].as_str().unwrap_or("");
            let found: Vec<Value> = WORDS.iter().filter(|w| w.starts_with(partial)).map(|w| json!({"value": w})).collect();
            Ok(json!({"completions": found}))
        }
        _ => Err((-32601, format!("method not found: {}", method))),
    }
}

fn main() {
    eprintln!("{}: started (protocol {})", NAME, PROTOCOL);
    let mut input = Input { buf: Vec::new(), later: VecDeque::new(), eof: false };
    while let Some(line) = input.next() {
        let msg: Value = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(_) => {
                eprintln!("{}: skipped a line that is not JSON", NAME);
                continue;
            }
        };
        let (id, method) = match (msg.get("id"), msg["method"].as_str()) {
            (Some(id), Some(m)) => (id.clone(), m.to_string()),
            _ => continue, // a notification (a late tool/cancel, …) or an answer: nothing to do
        };
        match handle(&mut input, &method, &msg["params"]) {
            Ok(result) => send(json!({"id": id, "result": result})),
            Err((code, message)) => send(json!({"id": id, "error": {"code": code, "message": message}})),
        }
    }
}
