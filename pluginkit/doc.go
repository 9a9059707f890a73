// Package pluginkit is the plugin side of the bingo plugin wire, for
// plugins written in Go: fill in a Plugin with values implementing the
// sdk's own interfaces and call Main. The kit answers the handshake with a
// declaration derived from those values, routes every request to the value
// it names, and turns a tool's CallUI and a provider's emit into the wire's
// notifications.
//
// The same code runs as a native binary (transport exec) and as a WASI
// module (GOOS=wasip1 GOARCH=wasm, transport wasm):
//
//	package main
//
//	import (
//		"github.com/bingo/bingo-plugin-rpc/pluginkit"
//		"github.com/bingo/bingo-plugin-rpc/sdk"
//	)
//
//	func main() {
//		pluginkit.Main(&pluginkit.Plugin{
//			Name:     "wordcount",
//			Version:  "0.1.0",
//			Tools:    []sdk.Tool{countTool{}},
//			Commands: []sdk.Command{wordcountCommand{}},
//		})
//	}
//
// A handler reaches back to the host through HostFrom(ctx): Notice says a
// line under the plugin's name, Call calls any service the host knows
// (another plugin's, or the host's own bingo.host), and a tool's
// CallUI.Ask asks the person on the tool's own call.
//
// Decisions a plugin author may meet:
//   - Each request runs on its own goroutine; notifications (tool/cancel,
//     provider/cancel) are handled on the reader, in order, so a cancel is
//     never stuck behind a slow tool. hook/observe runs off the reader but
//     in order, one observation after the other. The goroutines are a few
//     long-lived ones taking turns as the reader: the one that read a
//     request runs it, and another reads on as soon as it blocks (a
//     request that never blocks is answered by the reader, which then
//     reads on itself: no goroutine switch, which a wasm guest pays
//     dearly for).
//   - A request before initialize is refused; requests pipelined behind
//     initialize wait for it. A failed Initialize fails every later request.
//   - tool/progress and provider/delta are written before the request's
//     answer; one emitted after the handler returned is dropped.
//   - Errors: an unknown method, or one of a kind the plugin has none of
//     (hook/decide to a plugin without hooks), is MethodNotFound (-32601);
//     an unknown tool, command, id or key, or bad params, is InvalidParams
//     (-32602) naming it, in the wire's terms ("args must be a string");
//     an error a handler returns is InternalError (-32603) with its
//     message.
//   - When stdin ends the host has gone: every handler's ctx is cancelled,
//     nothing more is written, and Serve returns once every handler has.
//
// The kit speaks the wire itself, without a JSON-RPC library, writing the
// bytes the host's would; why, and what it costs inside a wasm guest, is
// in docs/design.md ("pluginkit").
package pluginkit
