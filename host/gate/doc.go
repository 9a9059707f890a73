// Package gate owns the permission gate: the decision, before a tool call
// runs, whether it is allowed, denied, or needs the person's say, and the
// grammar of the patterns that decision is written in.
//
// The rules come from settings (permissions.allow, .deny and .ask, already
// unioned across the layers by package settings) and from --allow flags.
// Precedence is fixed and does not depend on where a rule was written:
//
//  1. a matching deny rule denies;
//  2. else a matching ask rule asks;
//  3. else a matching allow rule (settings or --allow) allows;
//  4. else the call is undecided, and the gate asks.
//
// One exception to 3: the tools of an untrusted project's plugins (New's
// untrusted names) are never allowed by a settings rule, only by --allow
// or the person's answer. An allow rule is a grant to the plugin its
// author meant, and a cloned repository can ship a plugin of any name.
//
// Deny wins over everything so that no layer and no flag can lift it; ask
// wins over allow so that a person who asked to be asked is asked even if
// a broader allow also matches. Asking by default is what the spec means
// by "the gate asks about every call": a bridge tool's claims about itself
// are never believed, so only the person's own rules decide it. With no one
// to ask (--print), the caller turns Ask into a denial and shows
// HowToAllow.
//
// A pattern is an exact tool name ("plugin__wordcount__count") or a prefix
// followed by one trailing "*" ("plugin__wordcount__*"); "*" alone matches
// every tool. Nothing else is a wildcard, and a pattern with a "*" anywhere
// but at its end, or with white space or control characters in it, is
// refused when the Gate is built: it could never match what its author
// meant, and a rule that silently matches nothing is how a deny goes
// missing.
//
//	g, err := gate.New(s.Permissions, allowFlags)
//	if err != nil { ... }
//	switch v, rule := g.Decide("plugin__wordcount__count"); v { ... }
package gate
