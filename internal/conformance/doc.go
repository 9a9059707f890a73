// Package conformance is the transport conformance suite: one set of cases,
// written once, run through package bridge over every transport — in memory
// (transport/mem), as a subprocess (transport/exec) and as a WASI module in
// wazero (transport/wasm). A case that passes on one transport and fails on
// another is a bug in that transport (or in the plugin build it runs), never
// a reason to skip: the spec promises exec and wasm plugins follow the same
// rules because the bridge sees only transport.Conn.
//
// It owns no code of its own; everything is in its tests:
//
//   - TestTestplugin drives internal/testplugin (every behaviour the bridge
//     has a rule for, good and bad) over mem, exec and wasm.
//   - TestWordcount drives the wordcount example in Python (exec) and in
//     Go built for wasip1 (wasm) and requires the same answers, as the
//     bridge decodes them. It has no mem column: examples/plugins/wordcount-wasm
//     is a main package, so its plugin cannot be imported into this process.
//   - BenchmarkToolCall times one tool call through the bridge on each
//     transport; BenchmarkRawPipe is the floor it is measured against — the
//     same call as hand-written JSON lines over OS pipes, without the bridge.
//
// TestMain builds the plugins once per test process (the native and the
// wasip1 testplugin, the wordcount module) and shares one wasm.Host, so each
// module is compiled once.
//
//	go test -race ./internal/conformance
//	go test -run '^$' -bench . -benchtime 2000x ./internal/conformance
package conformance
