// Package proxy holds one struct per capability that crosses the plugin
// wire — Tool, Command, Contributor, Compactor, Provider, Hook, Service —
// each implementing the sdk's own interface with method bodies that are
// wire calls. There is no parallel remote hierarchy: the host holds a
// *proxy.Tool as an sdk.Tool and never learns it is remote.
//
// Proxies need only a Caller, which package bridge satisfies; tests use a
// fake one. What a proxy believes comes from the host, never the plugin:
// a proxy tool's Traits are always the untrusted zero value, whatever the
// plugin's ToolSpec claims. Nor is an answer taken as it comes: it is
// decoded by protocol.Decode, so one missing its envelope ({"parts": …} for
// {"output": {"parts": …}}) is an error, not an empty answer, and one that
// does not decode says where and why in the wire's words.
package proxy
