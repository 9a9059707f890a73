// Package bridge owns one Plugin per manifest: starting its instance
// through a transport, the handshake, routing what the plugin sends back
// (progress, deltas, questions, notices, service calls), deadlines, and
// the death rules. It builds the plugin's proxies (package proxy) from its
// declaration and is the proxy.Caller they send through.
//
// The rules, from the spec:
//
//   - Handshake: initialize {protocol, pluginRoot, config, env}. A plugin
//     answering another protocol than protocol.Version, or another name
//     than its manifest's, is refused; the error is its one notice. The
//     rest of its declaration is held, entry by entry, to the rules
//     schema/plugin.json states and to the host's (hook points it fires,
//     no id twice, not the reserved service key): a bad entry, or a key
//     the declaration does not have, costs one notice naming its path
//     ("commands[2].name: …") and nothing else.
//   - Nothing a process says about itself is believed: tool names become
//     plugin__<plugin>__<tool> (refused, not shortened, past 64
//     characters), bridge tools wear the untrusted default traits, and
//     capabilities come only from the declaration.
//   - Every request has a deadline (Options.Deadlines, package bounds).
//     Past it the call fails with a DeadlineError (errors.Is
//     context.DeadlineExceeded). A tool call whose context is cancelled
//     sends tool/cancel and keeps waiting until the deadline; a provider
//     stream sends provider/cancel. A provider stream's deadline is for its
//     first delta, then ProviderIdle from each delta.
//   - Wedged: an instance is wedged when it owes at least one answer, every
//     request it owes is past its deadline, and it has answered nothing for
//     Grace (default 5s) since the later of its last answer and the latest
//     of those deadlines. An answer to any request counts; notifications do
//     not. A request stays owed until answered, even once its caller has
//     stopped waiting. So a request past its deadline (a contributor
//     dropped from its round) never takes down a call on the same instance
//     that is still within its own, and a lone hung call is killed Grace
//     after its deadline.
//   - Every write to a plugin is guarded: one still blocked after the
//     request's deadline, but never less than Grace (Grace for a
//     notification, and for an answer to the plugin's own request), means
//     the plugin is not reading its input, and it is wedged whatever else
//     is in flight. The floor is there because a short
//     deadline (1ms for a tool) bounds how long the answer may take, not
//     how soon a healthy plugin gets round to reading.
//   - A wedged instance is killed and the death rules apply. However many
//     requests and writes find it wedged, its one notice says why and is
//     its death's notice.
//   - A process is allowed to die. There are no health checks and no
//     supervisor: when an instance ends, calls answer sdk.ErrUnavailable,
//     one notice is raised, and the next call respawns it, spaced by
//     Backoff (defaults: the first respawn at once, then 500ms doubling up
//     to 30s; an instance that lived a minute starts the count again);
//     concurrent calls share one respawn.
//   - A failed restart is part of the death it follows: no notice of its
//     own, but a line in the plugin's log, the error of the read that
//     tried, and a backoff step like a death. An instance that ends during
//     or right after its handshake, before it was used, is such a failed
//     start, not a death. Coming back after failed restarts is the death's
//     second and last notice ("running again"). There is no give-up: a
//     crash-looping plugin costs at most one start per Backoff.Max, and
//     only when something reads it; reads in between answer
//     sdk.ErrUnavailable at once. Giving up would leave no way back, once
//     the person has fixed the plugin, short of restarting the host.
//   - Lazy start: a plugin given a declaration (Options.Declared, the
//     host's cache of what it declared last time) contributes from it at
//     once and is asleep: nothing runs until the first read (or a hook
//     observation) starts it through the respawn path; that read waits
//     for the start as long as a handshake may take (Initialize), and its
//     own deadline counts from there, since the host, not a death, put
//     the start off. A start that
//     follows no death, this one or one after an idle stop, has had no
//     notice: if it fails, that is its one notice ("could not start"),
//     and from then on it backs off like a death. A handshake whose kept
//     declaration differs from the one held replaces it, with one notice,
//     and Options.Redeclared tells the host to register the new proxies
//     (Options.Handshook, to cache the declaration; a plugin/declare
//     calls Redeclared only, and only when it changes something).
//   - Idle stop: an instance with nothing in flight and nothing owed for
//     Deadlines.IdleStop (5m) is stopped quietly (no death, no notice, a line in
//     its log); it is asleep again, and the next read starts it.
//   - The wire is line-delimited JSON-RPC (protocol.LineStream): a line that
//     is not a message, or is over the cap, goes to the plugin's log and is
//     skipped; an answer with an unknown id is logged and dropped.
//   - bingo.host is the reserved service key: ask (only on a call this
//     plugin is running now) and notice (one line under its name). A
//     question is withdrawn when its call ends or is cancelled. The
//     person's time to answer counts against the tool call's deadline:
//     a tool that asks should have a deadline that allows for a person.
//
// Exec and wasm plugins follow the same rules because this package sees
// only transport.Conn.
//
// # Bounds
//
// A plugin must not be able to make the host grow without limit, however
// it misbehaves. What it can make the host hold is bounded, per plugin:
//
//   - Its requests to the host: at most MaxPluginRequests (64) are
//     answered at once. Past that the host stops reading from the plugin
//     until one is answered (backpressure: see MaxPluginRequests for why
//     not a refusal). Answers it does not read are guarded writes, so a
//     plugin flooding requests without reading is killed as wedged after
//     Grace.
//   - Its own notices: a burst of NoticeBurst (10), then one a NoticeEvery
//     (1s). The rest go to its log (Options.Log) and are summarised in one
//     line naming it (Options.LogPath) once the rate allows, and at Close;
//     each is still answered at once.
//   - A provider's response: Deadlines.ProviderTotal (10m) for the whole
//     stream, however lively, and Limits.ProviderResponseMiB (32 MiB) for
//     its deltas, counted as they cross the wire. Past either the stream
//     is cancelled (provider/cancel), nothing more reaches the caller, one
//     notice says why, and the call fails: a *DeadlineError past the
//     deadline, a *TooLargeError past the cap. A plugin that does not end
//     the stream within Grace of the cancel is wedged.
//   - A stdout line: Options.MaxLine (protocol.DefaultMaxLine, 64 MiB). A
//     longer one is let go as it streams past, costing at most the cap;
//     one line in the log says so, and the wire goes on.
//   - A declaration: MaxDeclaration (1 MiB). The answer to initialize is
//     read under that line cap, so a longer one is let go as it arrives
//     and the handshake fails; a longer plugin/declare is refused before
//     it is decoded. Of each kind, MaxContributions (1024) are offered.
//     Options.Budget caps what several plugins (a project's) declare
//     together.
//
// The deadline and the cap of a provider's response are the person's to
// set (deadlines.providerTotal, limits.providerResponseMiB; see
// host/settings); the other bounds are constants. host.TestMemoryBound
// floods the host from a hostile plugin in each of these ways and holds it
// to 300 MiB of growth at the defaults; internal/conformance's TestFloods
// checks the rules hold over every transport.
package bridge
