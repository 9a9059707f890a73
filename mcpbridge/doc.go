// Package mcpbridge runs a Model Context Protocol server as a bingo plugin.
// It owns the translation between the two protocols and nothing else: it
// is a transport wrapper, so everything the bridge does for a plugin
// (deadlines per crossing, the wedge rule, death and respawn with backoff,
// notices, the log, the trace, the gate, hooks) applies unchanged, and the
// host never learns that a plugin is MCP.
//
// [Wrap] takes the transport that runs the server (exec, or wasm for a
// server compiled to WASI, which then runs in the same sandbox as any
// wasm plugin) and returns one whose instances speak the plugin wire. Each
// Start starts the server and, in this process, a translator: an MCP
// client from the official SDK (github.com/modelcontextprotocol/go-sdk)
// on the server's stdio, and a bingo plugin on the other side of an
// in-memory pipe (transport/mem), which is the Conn the bridge gets.
// Killing that Conn kills the server; the server ending ends it, with the
// server's exit as its Wait, so the bridge's death rules see the real
// process. The protocol version is negotiated as the SDK does it (it
// tries 2026-07-28 first, and falls back to initialize for older servers).
//
// # The mapping
//
// Host → server (the bridge's requests, answered by the translator):
//
//	bingo                          MCP
//	initialize                     initialize (or server/discover), then tools/list
//	                               and prompts/list (every page, to 100 pages
//	                               and 1000 entries each, the rest left out with
//	                               a line in the log); the answer
//	                               declares the manifest's name (the server's own
//	                               name and version go to the log; its version
//	                               is declared), protocol 5. A server that fails
//	                               to initialize fails the handshake with one
//	                               error: the bridge's one notice.
//	  params.config                the client capability experimental.bingo.config
//	                               (and, for an exec server, the host sets the
//	                               env var BINGO_PLUGIN_CONFIG)
//	tools[]                        tools/list: name (every character not a letter,
//	                               digit, '_' or '-' becomes '_'), description,
//	                               inputSchema passed through; the annotations
//	                               (title, readOnly, destructive, idempotent,
//	                               openWorld) are said in words as the tool's
//	                               claims ("title "Safe", read-only, …"), which
//	                               the host shows the person it asks whether to
//	                               run a call, and never believed: the bridge
//	                               gives the tool the untrusted default traits
//	                               and names it plugin__<name>__<tool> (≤ 64
//	                               characters, or refused with a notice). A
//	                               tool whose execution.taskSupport is
//	                               "required" is not declared: it runs only as
//	                               a task, which neither the sdk nor bingo
//	                               does (one notice a process says so)
//	tool/call                      tools/call, with the call id as progressToken;
//	                               its result:
//	  text content                   a text part, as it is
//	  image, audio content           a text part "[image: <mime>, <n> bytes]"
//	  resource_link                  "[resource link: <uri> (<name>), <mime>] <description>"
//	  embedded text resource         "[resource <uri>]\n<text>"
//	  embedded blob resource         "[resource <uri>: <mime>, <n> bytes]"
//	  isError                        ToolOutput.IsError
//	  structuredContent              the display: a keyValue view of an object
//	                                 (a text view of anything else); a text part
//	                                 too when there is no content
//	  audience ["user"] content      the display (a text view, stacked with the
//	                                 rest), never a part: the model does not read it
//	  a JSON-RPC error               the call's error
//	tool/cancel                    the sdk call's ctx is cancelled: the server gets
//	                               notifications/cancelled, and the host is
//	                               answered IsError "cancelled: …" once the
//	                               server has answered a ping (the bridge waits
//	                               for that answer to the deadline, as for any
//	                               plugin: a server that answers nothing at all
//	                               is wedged, and killed)
//	the server dies under a call   no answer: the instance ends with the server,
//	                               and the bridge's death rules apply (one
//	                               notice; the next use starts it again)
//	commands[]                     prompts/list: one command per prompt, args free
//	                               with the hint "<required> [optional]" (none
//	                               when the prompt has no arguments)
//	command/run                    prompts/get: words name=value set that argument,
//	                               the other words fill the rest in order, the
//	                               last taking the rest of the line; the
//	                               messages' text, joined by blank lines, is a
//	                               prompt outcome (sent to the model as the
//	                               person's turn); a missing required argument
//	                               is an error outcome with the usage
//	command/complete               completion/complete (ref/prompt) on the argument
//	                               being typed; each value is answered as the
//	                               whole line
//	contributors[] "instructions"  declared when the server gave instructions at
//	                               initialize: context/contribute answers one
//	                               piece "MCP server instructions", at most 16 Ki
//	                               characters and the query's budget
//	contributors[] "resources"     declared only when Config.Resources (the
//	                               person's mcp.<name>.resources)
//	context/contribute             resources/list (to 100 pages), then
//	                               resources/read of the first 16: each text content a piece titled
//	                               "<title or name> (<uri>)", at most 16 Ki
//	                               characters each and the query's budget in
//	                               all; blobs are left out
//	past its deadline              context/contribute, command/run and
//	                               command/complete have no cancel on the wire,
//	                               so the translator ends each at its deadline
//	                               (Config.Deadlines, the bridge's): the server
//	                               gets notifications/cancelled, and once it has
//	                               answered a ping the host is answered the
//	                               error (too late to be used, but no longer
//	                               owed, so a server that answers is not wedged;
//	                               one that answers no ping within Grace is)
//
// Server → host (what the server sends, translated by the translator):
//
//	MCP                            bingo
//	notifications/progress         tool/progress of the call whose id is the
//	                               token: its message, or "<progress>/<total>";
//	                               taken as it is read, so it reaches the host
//	                               before the call's answer
//	notifications/message          a line "mcp [<logger>] <level>: <data>" in the
//	                               plugin's log (level info and up are asked
//	                               for); the first at error level or above is
//	                               also one bingo.host notice, later ones go to
//	                               the log only
//	elicitation/create             bingo.host ask on the tool call it is part of
//	                               (askingCall: the call the sdk's ctx names;
//	                               before protocol 2026-07-28, the one call
//	                               running), a question a field (elicit.go);
//	                               declined when no call can be named, and in
//	                               url mode; cancel when no one can be asked
//	sampling/createMessage         refused unless Config.Sample is set (the
//	                               person's mcp.<name>.sampling); then the host's
//	                               configured provider answers, under the hooks
//	                               at prompt/before; the result names the model
//	                               that answered (SampleResult.Model)
//	notifications/tools/list_changed,
//	notifications/prompts/list_changed
//	                               tools/list and prompts/list again, sent as a
//	                               plugin/declare notification: the bridge holds
//	                               it to the handshake's rules and the host
//	                               replaces the plugin's contributions
//	roots/list                     the one root, Config.Root (the working
//	                               directory) as a file:// URI; the roots
//	                               capability is declared only with a root,
//	                               and without listChanged
//
// A server's stderr is the plugin's log, as for any plugin. With
// Config.Trace (--trace) the MCP wire is traced there too, both ways, at
// the framing layer (lineTransport), so a remote server's lines are as a
// process's and its HTTP headers are never among them.
//
// # A server that misbehaves
//
// The translator frames the server's stdout itself (lineTransport), as
// the bridge frames a plugin's: a line that is not a JSON-RPC message,
// or is over the cap, goes to the plugin's log and is skipped, and the
// session goes on. An error whose id is null answers the server/discover
// in flight (lineConn.discoverRefused): a server refusing it so is
// initialized through the sdk's fallback, initialize. A session that ends
// all the same (the server closed its stdout, or its stdin broke) while
// the process lives on ends the instance Grace later, the server killed:
// a death by the bridge's rules, with one notice naming why, and the next
// use starts it again.
//
// Every request to the server is watched from its deadline on: past it,
// the server must answer a ping within Grace, or it is wedged and killed,
// the death's notice saying so. The bridge's own wedge rule holds too,
// but it spares an instance that owes a request still within its
// deadline, so a frozen server that keeps being sent calls would never
// meet it.
package mcpbridge
