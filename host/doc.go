// Package host is the smallest real agent host around the bridge: it owns
// the person's settings, the plugins of one run, the registry of what they
// contribute, the permission gate, and the turn loop.
//
// Open discovers manifests in the layers (~/.bingo/plugins, the project's
// .bingo/plugins, --plugin-dir), builds each plugin's transport (exec or
// wasm) and bridge, starts them all in parallel, and registers what each
// declared. A broken manifest, a failed handshake or a refused declaration
// costs a notice and that one plugin or contribution, never the run.
//
// Everything is registered by the sdk's own interfaces, so a plugin's proxy
// and the host's own in-process /compact are used alike. Names are first
// come, first kept: the host's own commands first, then plugins by layer
// (--plugin-dir, then project, then user) and name; a clash is a notice
// naming who keeps the name. Tool names cannot clash across plugins
// (plugin__<plugin>__<tool>).
//
// A tool call (CallTool) runs hooks at tool/before, then the gate, then the
// tool; hooks can only tighten: their verdict is combined with the gate's,
// never in place of it (there is no Allow outcome). A turn (Turn) gathers
// context from every contributor at once (a late one is dropped with a
// notice), compacts past the budget, streams the provider's answer, runs
// the calls it asks for, and repeats until an answer without calls or the
// step cap. Observations (tool/after, turn/end) are sent in order on
// goroutines the host owns; nothing waits on them.
//
// What only the person may grant stays out of a repository's hands: wasm
// sandbox grants are honoured from the user's own settings only, and an
// API key is sent only to the endpoint the user's own settings send it to.
package host
