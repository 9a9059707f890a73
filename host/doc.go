// Package host is the smallest real agent host around the bridge: it owns
// the person's settings, the plugins of one run, the registry of what they
// contribute and the permission gate, and runs the conversation over them
// (package agent).
//
// Open discovers manifests in the layers (~/.bingo/plugins, the project's
// .bingo/plugins, --plugin-dir), builds each plugin's transport (exec or
// wasm) and bridge, and registers what each declares. A plugin whose
// declaration is cached and current (package declcache) is registered from
// the cache and not started: the first use of one of its contributions
// starts it (the bridge's lazy start), and a declaration that changed
// replaces its registrations (Registry.Replace). The others are started in
// parallel and cached. A broken manifest, a failed handshake or a
// refused declaration costs a notice and that one plugin or contribution,
// never the run.
//
// What the plugins contribute is held in a registry (package registry);
// the conversation over them (turns, compaction, tool calls) is package
// agent's, embedded in Host. Host gives the agent what only the plugin
// set knows: the provider the settings choose, the hooks' combined
// decisions and observations (in order, on goroutines Host owns and Close
// waits for), and whom the person trusts.
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
// hear only its own tools (hooks.go); its slash commands lose to the
// person's own; its compactor is never asked; and what its contributors
// add is marked as an untrusted project's and shares one budget. Of an
// untrusted project's settings file only its deny and ask rules apply
// (settings.LoadLayered). Command names go, in order, to the host, a
// --plugin-dir, a trusted project, the person's own plugins, then an
// untrusted project, each a notice naming the loser and the keeper.
// Every plugin shadowed by a higher layer's copy is one notice and a row
// in Plugins.
package host
