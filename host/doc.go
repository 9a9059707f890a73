// Package host is the smallest real agent host around the bridge: it owns
// the person's settings, the plugins of one run, the registry of what they
// contribute, the permission gate, and the turn loop.
//
// Open discovers manifests in the layers (~/.bingo/plugins, the project's
// .bingo/plugins, --plugin-dir), builds each plugin's transport (exec or
// wasm) and bridge, and registers what each declares. A plugin whose
// declaration is cached and current (package declcache) is registered from
// the cache and not started: the first use of one of its contributions
// starts it (the bridge's lazy start), and a declaration that changed
// replaces its registrations (Registry.replace). The others are started
// in parallel and cached. A broken manifest, a failed handshake or a
// refused declaration costs a notice and that one plugin or contribution,
// never the run.
//
// Everything is registered by the sdk's own interfaces, so a plugin's proxy
// and the host's own in-process /compact are used alike. A name only one
// may keep goes to the host's own commands first, then to plugins by rank
// (below) and name, whatever the order they are registered in; a clash is
// a notice naming who keeps the name. Tool
// names cannot clash across plugins (plugin__<plugin>__<tool>).
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
// What plugins put in the model's context is held apart from what the
// person said (compact.go, turn.go): a compactor's answer is vetted (the
// current turn as it was; the person's messages only verbatim and in
// order; its own words only as marked assistant summaries) and one that
// breaks the rule is refused and not asked again; every contributed piece
// reaches the model in a <context from="plugin NAME"> block its text
// cannot close.
//
// What only the person may grant stays out of a repository's hands: wasm
// sandbox grants and the env rule are honoured from the user's own
// settings only, and an API key is sent only to the endpoint the user's
// own settings send it to.
//
// A project is a stranger until the person trusts it (package trust keeps
// the record; projecttrust.go applies it). An untrusted project plugin —
// every plugin of an untrusted project, or one whose files changed since
// the person trusted it — is held to this: an exec plugin is not started
// at all (it is listed with why); a wasm plugin runs in the default
// sandbox; it never takes the name of one of the person's plugins (it is
// held back, so every name in the person's settings means the person's
// plugin) and a provider the person names is never its; none of the
// person's grants for its name reach it (config, sandbox, settings allow
// rules); its hooks may refuse or ask but not redirect, and its observers
// hear only its own tools (calls.go); its slash commands lose to the
// person's own; its compactor is never asked; and what its contributors
// add is marked as an untrusted project's and shares one budget. Of an
// untrusted project's settings file only its deny and ask rules apply
// (settings.LoadLayered). Command names go, in order, to the host, a
// --plugin-dir, a trusted project, the person's own plugins, then an
// untrusted project, each a notice naming the loser and the keeper.
// Every plugin shadowed by a higher layer's copy is one notice and a row
// in Plugins.
package host
