// Command wordcount-wasm is the wordcount example plugin in Go, built for
// WASI preview1 and run by the host in wazero:
//
//	GOOS=wasip1 GOARCH=wasm go build -o examples/plugins/wordcount-wasm/plugin.wasm ./examples/plugins/wordcount-wasm
//
// It contributes the same tool (count) and command (/wordcount) as the
// Python example in ../wordcount, and gives every request the same answer;
// parity_test.go holds the two (and the wasm build, run in wazero) to that.
//
// It owns the counting, reading and completion rules (count.go) and the
// tool and the command as ordinary sdk.Tool and sdk.Command values
// (main.go). The wire is pluginkit's: the kit answers the handshake, routes
// each request to the tool or the command and writes the answers, so this
// package has no JSON-RPC code of its own. Nothing but regular_wasip1.go is
// wasip1-only, so the package builds and tests natively too.
//
// "The same answer" is the same JSON value, not the same bytes: the kit
// writes members in the order the host's JSON-RPC library does and escapes
// <, > and & as \u003c, \u003e and \u0026, where main.py writes them as
// typed; and it answers requests concurrently, so answers to different
// requests may come in another order (JSON-RPC pairs them by id). Every
// code, message and field is the same: main.py words its refusals (an
// unknown tool, a second initialize, bad params) as the kit does.
package main
