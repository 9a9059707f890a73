// rustguest is the test guest of transport/wasm written in Rust, whose
// standard library reaches files through wasi-libc's pre-opens and working
// directory as C's does, not as Go's runtime does. It reads one command
// per line on stdin and answers each with one line:
//
//	read PATH           ok <content> | err <message>
//	write PATH TEXT     ok | err <message>
//	cd DIR              ok | err <message>   (the guest's working directory)
//
// Built by the tests with Debian's rustc --target wasm32-wasi.
use std::io::{self, BufRead, Write};

fn main() {
    let stdin = io::stdin();
    let mut out = io::stdout();
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(_) => break,
        };
        let mut words = line.splitn(3, ' ');
        let answer = match (words.next(), words.next(), words.next()) {
            (Some("read"), Some(p), None) => std::fs::read_to_string(p).map(|s| format!("ok {}", s)),
            (Some("write"), Some(p), Some(text)) => std::fs::write(p, text).map(|_| "ok".to_string()),
            (Some("cd"), Some(p), None) => std::env::set_current_dir(p).map(|_| "ok".to_string()),
            _ => Ok("err unknown command".to_string()),
        };
        let answer = answer.unwrap_or_else(|e| format!("err {}", e));
        let _ = writeln!(out, "{}", answer);
        let _ = out.flush();
    }
}
