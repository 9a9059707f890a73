// Package bridge owns one Plugin per manifest: starting its instance
// through a transport (it sees only transport.Conn, so exec and wasm keep
// the same rules), the handshake, routing what the plugin sends back,
// deadlines, and the death rules. It builds the plugin's proxies from its
// declaration and is the proxy.Caller they send through. Why: docs/design.md.
//
// The rules, from the spec:
//
//   - Handshake: initialize. Another protocol than protocol.Version, or
//     another name than the manifest's, is refused with one notice. Each
//     bad entry of the declaration (schema/plugin.json's rules, the
//     host's) costs one notice naming its path and nothing else.
//   - Nothing a process says about itself is believed: tool names become
//     plugin__<plugin>__<tool> (refused past 64 characters), tools wear the
//     untrusted default traits, capabilities come only from the declaration.
//   - Every request has a deadline (Deadlines); past it the call fails with
//     a DeadlineError. A cancelled tool call sends tool/cancel and waits on
//     to its deadline; a provider stream sends provider/cancel. A deadline
//     sends the same cancel, and the answer is still taken if it comes.
//   - Wedged: an instance that has answered nothing since the oldest
//     deadline it has missed (a request still unanswered past it), for Grace
//     after it or after its last answer if that came later, whatever newer
//     requests are still within theirs; or whose input write stays blocked
//     past the request's deadline (never less than Grace). It is killed
//     with one notice. A plugin that answers for something behind it (an
//     MCP translator) turns on a liveness probe (Options.Probe): its
//     answers past their deadlines show nothing, and a probe sent as a
//     deadline passes must be answered instead.
//   - A process may die: calls answer sdk.ErrUnavailable, one notice is
//     raised, and the next read respawns it, spaced by Backoff; concurrent
//     reads share one start. A failed restart is part of the death it
//     follows (a log line, a backoff step); coming back is its second and
//     last notice. There is no give-up.
//   - Lazy start: a plugin given Options.Declared contributes from it and
//     sleeps until a read or an observation starts it; that read waits as
//     long as a handshake may. A start that follows no death that fails is
//     its one notice. A handshake that declares otherwise than held
//     replaces the declaration, with one notice (Options.Redeclared).
//   - Idle stop: unused for Deadlines.IdleStop, the instance is stopped
//     quietly; it sleeps until the next read.
//   - A Plugin's lifecycle is one state (Status); Close ends every start
//     and says what it could not stop.
//   - The wire is line-delimited JSON-RPC, run by one engine (wire.go); a
//     line that is not a message, is over the cap, or answers an unknown id
//     is logged and dropped.
//   - bingo.host is the reserved service key: ask (only during a call the
//     plugin is running; withdrawn when it ends) and notice.
//
// # Bounds
//
// What a plugin can make the host hold is bounded, however it misbehaves:
//
//   - its requests answered at once: MaxPluginRequests, then backpressure;
//   - its notices: NoticeBurst, then one a NoticeEvery, the rest logged;
//   - a provider's response: Deadlines.ProviderTotal and
//     Limits.ProviderResponseMiB, past which it is cancelled and fails;
//   - a stdout line: Options.MaxLine, let go as it streams past;
//   - a declaration: MaxDeclaration, MaxContributions of each kind, and
//     Options.Budget across a project's plugins.
package bridge
