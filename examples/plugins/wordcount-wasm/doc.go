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
// answers; it writes the bytes sourcegraph/jsonrpc2 (the host's library)
// writes, which HTML-escape every string ("<path>" becomes
// "\u003cpath\u003e") and order members their own way; and its refusals
// (a second initialize, an unknown tool, bad params) are worded as the
// kit words them. This example must answer exactly as main.py does, so it
// keeps its own loop; its tool and command would plug into
// pluginkit.Plugin unchanged. Not for speed: served by pluginkit through
// the same wasm transport, they answer a count in about 0.6 of this
// loop's time, since the kit reads and writes its hot messages without
// reflection and this loop uses encoding/json.
package main
