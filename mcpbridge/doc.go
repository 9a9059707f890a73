// Package mcpbridge runs a Model Context Protocol server as a bingo plugin.
// It owns the translation between the two protocols and nothing else: it
// is a transport wrapper, so everything the bridge does for a plugin
// (deadlines per crossing, the wedge rule, death and respawn with backoff,
// notices, the log, the trace, the gate, hooks) applies unchanged, and the
// host never learns that a plugin is MCP.
//
// [Wrap] takes the transport that runs the server (exec; wasm for a server
// compiled to WASI, in the same sandbox as any wasm plugin; or a remote
// server over Streamable HTTP, transport/mcphttp) and returns one whose
// instances speak the plugin wire. Each Start starts the server and, in
// this process, a translator: an MCP client from the official go-sdk on
// the server's stdio (for a remote server, on the sdk's own HTTP
// transport, which the translator watches through mcphttp.Tap), and a bingo plugin on the other side of an in-memory
// pipe (transport/mem), which is the Conn the bridge gets. Killing that
// Conn kills the server; the server ending ends it, with the server's exit
// as its Wait, so the bridge's death rules see the real process.
//
// The rules of the translation (docs/design.md lists each message):
//
//   - Tools, prompts (as commands with completion), resources (only when
//     the person allows mcp.<name>.resources) and the server's
//     instructions (a contributor) become the plugin's declaration; a
//     list_changed becomes plugin/declare.
//   - A tool's annotations are said to the person as its claims and never
//     believed: MCP tools get the untrusted default traits. A tool that
//     runs only as a task is not declared.
//   - Content the model cannot read as text is described in a text part;
//     content for the user's eyes only (audience ["user"]) is shown, never
//     sent to the model.
//   - What the server asks of the host goes through the host's own doors:
//     elicitation is a question to the person on the call it belongs to
//     (declined outside one, cancelled when no one can be asked);
//     sampling is refused unless the person allows mcp.<name>.sampling,
//     and then answered only within one of the server's tool calls, at
//     most Config.MaxSamples times a call, each held to Config.MaxTokens;
//     roots is the working directory; logs go to the plugin's log.
//
// A server's stderr is the plugin's log, as for any plugin. With
// Config.Trace (--trace) the MCP wire is traced there too, both ways, at
// the framing layer (lineTransport), so a remote server's lines are as a
// process's and its HTTP headers are never among them.
//
// # A server that misbehaves
//
// The translator frames the server's stdout itself (lineTransport): a line
// that is not a JSON-RPC message, or is over the cap, goes to the log and
// is skipped, and the session goes on. A null-id error answers the
// server/discover in flight, and the sdk falls back to initialize. A
// session that ends while the process lives on ends the instance Grace
// later, the server killed: a death by the bridge's rules, one notice.
//
// A request past its deadline is answered by the translator itself (a tool
// call the host cancelled, or one bounded here): that answer shows nothing
// of the server, so the bridge's one wedge rule asks with its liveness
// probe instead (Probe, which the bridge must be given as Options.Probe),
// and the translator answers the probe once the server answers a ping.
package mcpbridge
