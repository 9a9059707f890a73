// Package check is the conformance checker behind `bingo plugins check
// DIR`: what a plugin author runs before publishing.
//
// Run loads the manifest with the host's own rules (manifest.Load), starts
// the plugin over its real transport (exec or wasm) through the same bridge
// the host uses, and taps the wire: every line each way is recorded with
// its time. It then
//
//   - validates the handshake answer strictly against schema/plugin.json
//     (unknown keys included) and reports every part of the declaration
//     the host would refuse, in the host's words;
//   - calls every declared tool (with a schema-valid sample input built
//     from its inputSchema, or the author's own from Options.Inputs),
//     command (run with no arguments, completed from ""), contributor,
//     compactor (a short conversation, its answer held to the host's
//     compaction rule: host.VetCompaction), provider (one request, cancelled
//     after its first delta), hook (every declared point, with a sample
//     payload of the shape the host sends) and service (each method whose
//     params schema its declaration gives, with a sample built from it, or
//     the author's input; a method without one is named as not called),
//     once each, timing each answer against its deadline: the deadlines
//     the person's settings set for a run in Cwd (host.LoadSettings), so a
//     person who tightened one sees a plugin too slow for it;
//   - starts a tool call and cancels it (the author's slow call, given in
//     Options.Inputs under CancelInput, or the first tool's), failing a
//     plugin that answers about as late as the same call uncancelled:
//     it saw the cancel only after its work;
//   - kills the instance and calls again, to see it respawn cleanly;
//   - reads the tapped wire: a line on stdout that is not JSON (stdout
//     pollution), a line that is not one JSON-RPC message the schema
//     knows, an answer without its wrapper ({"output": …}), keys the
//     schema does not have, and the volume written to stderr.
//
// A call not answered by its deadline is reported once: its instance is
// killed, so that the steps after it meet a fresh one, and a tool stuck so
// is not called again.
//
// Each finding is one line in plain words, with a level: "fail" breaks the
// contract, "warn" is worth a look, "ok" is what was seen to work. A
// plugin conforms when there is no "fail".
package check
