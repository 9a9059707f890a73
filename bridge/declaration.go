package bridge

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// IdentityError is a handshake refused for what the plugin said it is:
// another protocol than the host's, or another name than its manifest's.
// A plugin's files make it say the same at every start, so a host may
// remember the refusal instead of starting the plugin again to hear it
// (the bingo host's declaration cache does).
type IdentityError struct{ msg string }

func (e *IdentityError) Error() string { return e.msg }

// declaredAtHandshake holds what a handshake declared. The first
// declaration is kept, and what the host refused of it costs a notice
// each. After that, a handshake that declares the same says nothing; one
// that declares otherwise (a cached declaration gone stale, a plugin
// changed between two starts) replaces the declaration held, with one
// notice and its refusals, and the host hears of it (redeclared).
func (p *Plugin) declaredAtHandshake(decl protocol.InitializeResult, refused []string) {
	p.mu.Lock()
	held := p.decl
	same := held != nil && sameDeclaration(*held, decl)
	if !same {
		p.decl, p.refused = &decl, refused
	}
	p.mu.Unlock()
	switch {
	case held == nil:
	case same:
		return
	default:
		p.opts.Raise(Notice{Plugin: p.opts.Name, Level: "info",
			Message: "its declaration changed since it last started; what it contributes is now what it declared this time"})
		p.redeclared(decl, true)
	}
	p.raiseRefusals(refused, p.opts.Raise)
}

// raiseRefusals raises, through raise, a notice for each part of a
// declaration the host refused.
func (p *Plugin) raiseRefusals(refused []string, raise func(Notice)) {
	const most = 20 // a declaration of a thousand bad entries needs no thousand notices
	if len(refused) > most {
		refused = append(refused[:most:most], fmt.Sprintf("and %d more parts of the declaration refused", len(refused)-most))
	}
	for _, msg := range refused {
		raise(Notice{Plugin: p.opts.Name, Level: "warn", Message: msg})
	}
}

// declaredLive takes a plugin/declare, held to the handshake's rules
// (readDeclaration): what is kept becomes the declaration, a notice for
// each part refused, and the host hears of a change (redeclared). One
// that fails outright costs one notice; one that changes nothing,
// nothing. The plugin may send it any number of times, so its notices go
// through its limiter.
func (p *Plugin) declaredLive(raw json.RawMessage) {
	err := p.opts.Budget.Take(p.opts.Name, len(raw))
	var decl protocol.InitializeResult
	var refused []string
	if err == nil {
		decl, refused, err = readDeclaration(p.opts.Name, raw)
	}
	if err != nil {
		p.notices.raise(Notice{Plugin: p.opts.Name, Level: "warn", Message: "its new declaration was refused: " + err.Error()})
		return
	}
	p.mu.Lock()
	changed := p.decl == nil || !sameDeclaration(*p.decl, decl)
	if !changed && slices.Equal(p.refused, refused) {
		p.mu.Unlock()
		return
	}
	p.decl, p.refused = &decl, refused
	p.mu.Unlock()
	p.raiseRefusals(refused, p.notices.raise)
	if changed {
		p.redeclared(decl, false)
	}
}

// redeclared tells Options.Redeclared of the declaration now held, so the
// host registers the new contributions; handshake says a handshake
// declared it, rather than the live plugin (plugin/declare).
func (p *Plugin) redeclared(decl protocol.InitializeResult, handshake bool) {
	if p.opts.Redeclared != nil {
		p.opts.Redeclared(decl, handshake)
	}
}

// sameDeclaration reports whether two kept declarations say the same, as
// they would cross the wire (a nil list and an empty one are the same).
func sameDeclaration(a, b protocol.InitializeResult) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Declaration is what the host kept of what the plugin declared: at its
// latest handshake, or Options.Declared before its first.
func (p *Plugin) Declaration() (protocol.InitializeResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.decl == nil {
		return protocol.InitializeResult{}, false
	}
	return *p.decl, true
}

// Refused is what the host refused of the declaration held, one message
// each (see readDeclaration): empty for one given as Options.Declared
// until a handshake declares otherwise.
func (p *Plugin) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// readDeclaration reads a plugin's answer to initialize, which nothing
// makes true but checking. What the plugin says it is (protocol, name,
// version) must hold, or the handshake fails with the error. The rest is
// taken key by key and entry by entry, each held to the rules
// schema/plugin.json states (protocol.Check) and to the host's own: a tool
// name the host can offer, hook points it fires, no id declared twice, not
// the reserved service key. A key or an entry that breaks one is refused
// with one message naming its path in the declaration ("commands[2].name:
// …"), and the rest is kept: a bad entry costs that entry, never the
// plugin. A key the declaration does not have is refused the same way, so
// a misspelt "tool" is not silently nothing.
func readDeclaration(plugin string, raw json.RawMessage) (decl protocol.InitializeResult, refused []string, err error) {
	r := &declReader{}
	if err := json.Unmarshal(raw, &r.top); err != nil || r.top == nil {
		return decl, nil, fmt.Errorf("answered initialize with %s, not a declaration", protocol.KindOf(raw))
	}
	// The protocol first: a plugin of another one may say the rest
	// otherwise, and that is the one thing worth telling.
	if err := identity(r, "protocol", &decl.Protocol); err != nil {
		return decl, nil, fmt.Errorf("answered initialize with a broken declaration: %w", err)
	}
	if decl.Protocol != protocol.Version {
		return decl, nil, &IdentityError{fmt.Sprintf("speaks protocol %d; this host speaks protocol %d only", decl.Protocol, protocol.Version)}
	}
	for _, err := range []error{identity(r, "name", &decl.Name), identity(r, "version", &decl.Version)} {
		if err != nil {
			return decl, nil, fmt.Errorf("answered initialize with a broken declaration: %w", err)
		}
	}
	if decl.Name != plugin {
		return decl, nil, &IdentityError{fmt.Sprintf("answered the handshake as %s, but its manifest names it %q", protocol.Quote(decl.Name), plugin)}
	}

	seen := map[string]bool{}
	once := func(at, field, id string) error {
		kind, _, _ := strings.Cut(at, "[")
		if seen[kind+"\x00"+id] {
			return fmt.Errorf("%s.%s: %s is declared twice", at, field, protocol.Quote(id))
		}
		seen[kind+"\x00"+id] = true
		return nil
	}
	decl.Tools = list(r, "tools", func(t sdk.ToolSpec, at string) error {
		if err := proxy.CheckToolName(plugin, t.Name); err != nil {
			return fmt.Errorf("%s.name: %w", at, err)
		}
		return once(at, "name", t.Name)
	})
	decl.Commands = list(r, "commands", func(c sdk.CommandSpec, at string) error { return once(at, "name", c.Name) })
	decl.Contributors = list(r, "contributors", func(d protocol.ContributorDecl, at string) error { return once(at, "id", d.ID) })
	decl.Compactors = list(r, "compactors", func(d protocol.CompactorDecl, at string) error { return once(at, "id", d.ID) })
	decl.Providers = list(r, "providers", func(d protocol.ProviderDecl, at string) error { return once(at, "id", d.ID) })
	decl.Hooks = list(r, "hooks", func(d protocol.HookDecl, at string) error {
		if err := offered(at+".decide", d.Decide, sdk.DecisionPoints(), "a decision point"); err != nil {
			return err
		}
		if err := offered(at+".observe", d.Observe, sdk.ObservationPoints(), "an observation point"); err != nil {
			return err
		}
		return once(at, "id", d.ID)
	})
	decl.Services = list(r, "services", func(d protocol.ServiceDecl, at string) error {
		if d.Key == protocol.HostServiceKey {
			return fmt.Errorf("%s.key: %q is reserved for the host", at, d.Key)
		}
		return once(at, "key", d.Key)
	})
	r.unknownKeys()
	return decl, r.refused, nil
}

// declReader hands out a declaration's keys and collects what it refuses.
type declReader struct {
	top     map[string]json.RawMessage
	known   []string // every key asked for, in the order a declaration lists them
	refused []string
}

func (r *declReader) take(key string) (json.RawMessage, bool) {
	r.known = append(r.known, key)
	raw, ok := r.top[key]
	delete(r.top, key)
	return raw, ok
}

func (r *declReader) refuse(format string, args ...any) {
	r.refused = append(r.refused, fmt.Sprintf(format, args...))
}

// unknownKeys refuses, in one message, every key no one took.
func (r *declReader) unknownKeys() {
	if len(r.top) == 0 {
		return
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(r.top)) {
		keys = append(keys, protocol.Quote(k))
	}
	r.refuse("%s ignored; a declaration holds %s", unknown(keys), strings.Join(r.known, ", "))
}

// unknown names unknown keys for a message, the first ten of them: a
// thousand misspellings need no thousand-key notice.
func unknown(keys []string) string {
	const most = 10
	s := "unknown key " + keys[0]
	if len(keys) > 1 {
		s = "unknown keys " + strings.Join(keys[:min(len(keys), most)], ", ")
	}
	if len(keys) > most {
		s += fmt.Sprintf(" and %d more", len(keys)-most)
	}
	return s
}

// identity reads one of the fields that say what the plugin is.
func identity[T any](r *declReader, key string, v *T) error {
	raw, ok := r.take(key)
	if !ok {
		return protocol.Problem{Path: key, Message: "required, but missing"}
	}
	if ps := protocol.Check[T](raw, key); len(ps) > 0 {
		return ps[0]
	}
	return json.Unmarshal(raw, v)
}

// list reads the entries under key: each held to the schema's rules for a
// T, then to rule, which says why the host refuses it (its message starts
// with the path). A refused entry costs one message; a kept one with keys
// the schema does not know, one message naming them.
func list[T any](r *declReader, key string, rule func(e T, at string) error) []T {
	raw, ok := r.take(key)
	if !ok {
		return nil
	}
	if protocol.KindOf(raw) != "an array" {
		r.refuse("%v; ignored", protocol.Check[[]T](raw, key)[0])
		return nil
	}
	var entries []json.RawMessage
	_ = json.Unmarshal(raw, &entries) // an array, from a valid message
	if len(entries) > MaxContributions {
		r.refuse("%s: %d declared, and a plugin may offer at most %d of a kind; %s[%d] and after not offered",
			key, len(entries), MaxContributions, key, MaxContributions)
		entries = entries[:MaxContributions]
	}
	var out []T
	for i, e := range entries {
		at := key + "[" + strconv.Itoa(i) + "]"
		var faults, strange []string // strange: keys the schema does not know
		for _, p := range protocol.Check[T](e, at) {
			if p.Unknown {
				strange = append(strange, p.Path)
			} else {
				faults = append(faults, p.Error())
			}
		}
		var v T
		if len(faults) == 0 {
			if err := json.Unmarshal(e, &v); err != nil {
				faults = append(faults, at+": "+err.Error()) // what the schema does not state: out of range
			} else if err := rule(v, at); err != nil {
				faults = append(faults, err.Error())
			}
		}
		if len(faults) > 0 {
			if len(strange) > 0 {
				faults = append(faults, unknown(strange))
			}
			r.refuse("%s; %s not offered", strings.Join(faults, "; "), at)
			continue
		}
		if len(strange) > 0 {
			r.refuse("%s ignored", unknown(strange))
		}
		out = append(out, v)
	}
	return out
}

// offered says which of the points a hook declared at at is not one of
// points, what the host offers as kind, if one.
func offered(at string, declared []string, points []sdk.HookPoint, kind string) error {
	for i, d := range declared {
		if slices.ContainsFunc(points, func(p sdk.HookPoint) bool { return p.String() == d }) {
			continue
		}
		names := make([]string, len(points))
		for j, p := range points {
			names[j] = strconv.Quote(p.String())
		}
		return fmt.Errorf("%s[%d]: %s is not %s; the host offers %s", at, i, protocol.Quote(d), kind, strings.Join(names, ", "))
	}
	return nil
}
