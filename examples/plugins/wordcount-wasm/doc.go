// Command wordcount-wasm is the wordcount example plugin in Go, built for
// WASI preview1 and run by the host in wazero:
//
//	GOOS=wasip1 GOARCH=wasm go build -o examples/plugins/wordcount-wasm/plugin.wasm ./examples/plugins/wordcount-wasm
//
// It contributes the same tool (count) and command (/wordcount) as the
// Python example in ../wordcount, and answers every request with the same
// bytes; parity_test.go holds the two (and the wasm build, run in wazero)
// to that.
//
// It owns, in one file each: the counting, reading and completion rules
// (count.go), the tool and the command as ordinary sdk.Tool and
// sdk.Command values (main.go), and a small JSON-RPC loop over stdin and
// stdout (wire.go). Nothing but regular_wasip1.go is wasip1-only, so the
// package builds and tests natively too.
//
// Why not pluginkit: the kit answers requests concurrently and stops
// writing once stdin ends, so a transcript piped in and closed gets no
// answers; and it writes through sourcegraph/jsonrpc2, which HTML-escapes
// every string ("<path>" becomes "\u003cpath\u003e") and orders keys its
// own way. This example must answer exactly as main.py does, so it keeps
// its own loop; its tool and command would plug into pluginkit.Plugin
// unchanged.
package main
