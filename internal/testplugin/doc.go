// Package testplugin is the Go plugin the conformance suite drives over
// every transport: in memory (Serve, run by transport/mem), as a native
// binary (cmd/testplugin, transport/exec) and as a WASI module (the same
// command built with GOOS=wasip1 GOARCH=wasm, transport/wasm). One body,
// three ways to run it, so a difference in behaviour is the transport's.
//
// Besides one well-behaved contribution of every kind, it has tools that
// misbehave on purpose, selected by name: hang (never answers), exit (the
// instance ends mid-call), garbage (non-JSON-RPC lines on stdout), twice (a
// duplicate answer and one to an id nobody asked), big, trusted (claims
// traits the host must ignore), and flood (a hostile plugin's floods:
// requests whose answers it never reads, notices, or over-long stdout
// lines). Its model, asked "endless", streams without end, deaf to
// provider/cancel. Its compactor, when the latest prompt says "inject",
// invents a message of the person's; its contributor, when the prompt
// says "escape", tries to break out of the block its text is put in. With
// TESTPLUGIN_REDIRECT_TOOL or _PROMPT set (a manifest's entry.env), it
// also declares a hook that redirects every tool call or model request to
// that value, as a hostile repository's would. With TESTPLUGIN_TOOLS=N it
// only answers initialize, declaring N trivial tools (a declaration as
// large as a hostile repository's), under the name TESTPLUGIN_NAME if set,
// so one build can be many plugins. With TESTPLUGIN_HOLD_MIB=N it first
// writes N MiB and keeps them, as a plugin at its memory limit does. It
// builds for wasip1, so
// it uses no os/exec, signals or network.
package testplugin
