package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Registry holds every contribution by the sdk's own interfaces: a plugin's
// proxy and an in-process implementation are registered and used the same
// way. Owner is the contributing plugin's name ("" for the host's own).
type Registry struct {
	notify func(bridge.Notice)
	// rank orders owners for names only one may keep (see New); nil
	// ranks every plugin alike. The host ("") outranks every plugin,
	// and between plugins of one rank the first by name keeps a name.
	rank func(owner string) int

	mu           sync.RWMutex
	tools        map[string]Owned[sdk.Tool]
	commands     map[string]Owned[sdk.Command]
	contributors []Owned[sdk.Contributor]
	compactors   []Owned[sdk.Compactor]
	providers    []Owned[sdk.Provider]
	hooks        []HookEntry
	services     map[string]Owned[sdk.Service]
	// waiting are the claims to a name that lost it, by kind and name:
	// one of them takes the name when its keeper lets it go (Replace).
	waiting map[claim][]Owned[any]
	// added are the plugins Add has registered: Replace leaves any other
	// alone, since Add reads its declaration when its turn comes.
	added map[string]bool
}

// claim names a name only one owner may keep: a tool, command or service.
type claim struct{ kind, name string }

// Owned is a contribution and the plugin that offers it ("" the host).
type Owned[T any] struct {
	Owner string
	Value T
}

// HookEntry is a registered hook and the points it declared ("site/point").
type HookEntry struct {
	Owner   string
	Hook    sdk.Hook
	Decide  []string
	Observe []string
}

// New returns an empty registry. notify receives the clashes' notices;
// rank orders owners for names only one may keep (nil ranks every plugin
// alike).
func New(notify func(bridge.Notice), rank func(owner string) int) *Registry {
	return &Registry{notify: notify, rank: rank,
		tools: map[string]Owned[sdk.Tool]{}, commands: map[string]Owned[sdk.Command]{},
		services: map[string]Owned[sdk.Service]{}, waiting: map[claim][]Owned[any]{}, added: map[string]bool{}}
}

// Add registers what a plugin contributes.
func (r *Registry) Add(owner string, c bridge.Contributions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(owner, c, nil)
}

// addLocked is Add, with r.mu held. A claim in quiet that owner loses
// raises no notice: owner was told when it first lost it.
func (r *Registry) addLocked(owner string, c bridge.Contributions, quiet map[claim]bool) {
	r.added[owner] = true
	for _, t := range c.Tools {
		r.addTool(owner, t, quiet)
	}
	for _, cmd := range c.Commands {
		r.addCommand(owner, cmd, quiet)
	}
	for _, x := range c.Contributors {
		r.contributors = append(r.contributors, Owned[sdk.Contributor]{owner, x})
	}
	for _, x := range c.Compactors {
		r.compactors = append(r.compactors, Owned[sdk.Compactor]{owner, x})
	}
	for _, x := range c.Providers {
		r.providers = append(r.providers, Owned[sdk.Provider]{owner, x})
	}
	for _, x := range c.Hooks {
		r.hooks = append(r.hooks, HookEntry{Owner: owner, Hook: x.Hook, Decide: x.DecidePoints, Observe: x.ObservePoints})
	}
	for _, x := range c.Services {
		r.addService(owner, x, quiet)
	}
}

// Replace puts c in place of everything owner contributed (a plugin whose
// declaration changed), under one hold of r.mu, so that no reader sees
// the plugin half replaced. A name owner keeps and declares again stays
// its own, never passing through another's hands; a name it lets go
// passes to the best of the claims that lost it, silently (it was theirs
// but for owner); a name owner newly claims goes to whichever of it and
// its keeper ranks higher, as registration in rank order would have given
// it, with the clash's notice to the loser, and a claim owner had lost
// and makes again is not noticed again. A plugin not registered yet (a
// declaration that arrives while Open is still starting plugins) is left
// to Add.
func (r *Registry) Replace(owner string, c bridge.Contributions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.added[owner] {
		return
	}
	again := map[claim]bool{}
	for _, t := range c.Tools {
		again[claim{"tool", t.Spec().Name}] = true
	}
	for _, cmd := range c.Commands {
		again[claim{"command", cmd.Spec().Name}] = true
	}
	for _, x := range c.Services {
		again[claim{"service", x.Key()}] = true
	}
	lost := map[claim]bool{}
	for k, l := range r.waiting {
		r.waiting[k] = slices.DeleteFunc(l, func(o Owned[any]) bool {
			lost[k] = lost[k] || o.Owner == owner
			return o.Owner == owner
		})
	}
	dropNamed(r, r.tools, "tool", owner, again, func(v any) sdk.Tool { return v.(sdk.Tool) })
	dropNamed(r, r.commands, "command", owner, again, func(v any) sdk.Command { return v.(sdk.Command) })
	dropNamed(r, r.services, "service", owner, again, func(v any) sdk.Service { return v.(sdk.Service) })
	mine := func(o string) bool { return o == owner }
	r.contributors = slices.DeleteFunc(r.contributors, func(x Owned[sdk.Contributor]) bool { return mine(x.Owner) })
	r.compactors = slices.DeleteFunc(r.compactors, func(x Owned[sdk.Compactor]) bool { return mine(x.Owner) })
	r.providers = slices.DeleteFunc(r.providers, func(x Owned[sdk.Provider]) bool { return mine(x.Owner) })
	r.hooks = slices.DeleteFunc(r.hooks, func(x HookEntry) bool { return mine(x.Owner) })
	r.addLocked(owner, c, lost)
}

// dropNamed lets go of every name owner keeps in names, passing each to
// its best waiting claim unless owner claims it again. Called with r.mu
// held.
func dropNamed[T any](r *Registry, names map[string]Owned[T], kind, owner string, again map[claim]bool, as func(any) T) {
	for name, o := range names {
		if o.Owner != owner {
			continue
		}
		delete(names, name)
		k := claim{kind, name}
		l := r.waiting[k]
		if again[k] {
			continue // owner's again: passing it on and back would be noticed
		}
		if len(l) == 0 {
			continue
		}
		best := 0
		for i := range l {
			if r.outranks(l[i].Owner, l[best].Owner) {
				best = i
			}
		}
		names[name] = Owned[T]{l[best].Owner, as(l[best].Value)}
		r.waiting[k] = slices.Delete(l, best, best+1)
	}
}

// outranks reports whether a keeps a name against b: the host against
// every plugin, then the higher rank, then the first by name.
func (r *Registry) outranks(a, b string) bool {
	switch {
	case a == "" || b == "":
		return a == ""
	case r.rank != nil && r.rank(a) != r.rank(b):
		return r.rank(a) > r.rank(b)
	}
	return a < b
}

// keep decides a clash over name between its keeper prev and a new
// claim by owner, raising the clash's notice to the loser and keeping the
// losing claim waiting (quiet: see addLocked). It reports whether owner
// takes the name. Called with r.mu held.
func (r *Registry) keep(kind, shown, name string, prev Owned[any], owner string, v any, quiet map[claim]bool) bool {
	k := claim{kind, name}
	if r.outranks(prev.Owner, owner) {
		if !quiet[k] {
			r.clash(kind, shown, owner, prev.Owner, "is already offered by %s, which keeps it")
		}
		r.waiting[k] = append(r.waiting[k], Owned[any]{owner, v})
		return false
	}
	r.clash(kind, shown, prev.Owner, owner, "is now offered by %s, which outranks this plugin and takes it")
	r.waiting[k] = append(r.waiting[k], prev)
	return true
}

// clash tells loser that winner has name: how is the message's end, with
// a %s for the winner.
func (r *Registry) clash(kind, name, loser, winner, how string) {
	who := func(o string) string {
		if o == "" {
			return "the host"
		}
		return "plugin " + o
	}
	r.notify(bridge.Notice{Plugin: loser, Level: "warn",
		Message: fmt.Sprintf("%s %q "+how, kind, name, who(winner))})
}

// AddTool registers a tool under its spec's name. Of two owners of a name
// the one that ranks higher keeps it (outranks): registered in rank order,
// the first.
func (r *Registry) AddTool(owner string, t sdk.Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addTool(owner, t, nil)
}

func (r *Registry) addTool(owner string, t sdk.Tool, quiet map[claim]bool) {
	name := t.Spec().Name
	if prev, ok := r.tools[name]; ok && !r.keep("tool", name, name, Owned[any]{prev.Owner, prev.Value}, owner, t, quiet) {
		return
	}
	r.tools[name] = Owned[sdk.Tool]{owner, t}
}

// AddCommand registers a command under its own name (commands are not
// rewritten: people type them); of two owners of a name the one that
// ranks higher keeps it, as with AddTool.
func (r *Registry) AddCommand(owner string, c sdk.Command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addCommand(owner, c, nil)
}

func (r *Registry) addCommand(owner string, c sdk.Command, quiet map[claim]bool) {
	name := c.Spec().Name
	if prev, ok := r.commands[name]; ok && !r.keep("command", "/"+name, name, Owned[any]{prev.Owner, prev.Value}, owner, c, quiet) {
		return
	}
	r.commands[name] = Owned[sdk.Command]{owner, c}
}

// AddContributor registers a context contributor.
func (r *Registry) AddContributor(owner string, c sdk.Contributor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.contributors = append(r.contributors, Owned[sdk.Contributor]{owner, c})
}

// AddCompactor registers a compaction strategy.
func (r *Registry) AddCompactor(owner string, c sdk.Compactor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.compactors = append(r.compactors, Owned[sdk.Compactor]{owner, c})
}

// AddProvider registers a model provider.
func (r *Registry) AddProvider(owner string, p sdk.Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.providers = append(r.providers, Owned[sdk.Provider]{owner, p})
}

// AddHook registers a hook.
func (r *Registry) AddHook(h HookEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks = append(r.hooks, h)
}

// AddService registers a service; bingo.host is the host's own and is
// refused, and of two owners of a key the one that ranks higher keeps
// it, as with AddTool.
func (r *Registry) AddService(owner string, s sdk.Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addService(owner, s, nil)
}

func (r *Registry) addService(owner string, s sdk.Service, quiet map[claim]bool) {
	key := s.Key()
	if key == protocol.HostServiceKey {
		r.notify(bridge.Notice{Plugin: owner, Level: "warn", Message: "service key bingo.host is reserved for the host; not offered"})
		return
	}
	if prev, ok := r.services[key]; ok && !r.keep("service", key, key, Owned[any]{prev.Owner, prev.Value}, owner, s, quiet) {
		return
	}
	r.services[key] = Owned[sdk.Service]{owner, s}
}

// Tool returns the tool named name.
func (r *Registry) Tool(name string) (sdk.Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t.Value, ok
}

// Tools returns every tool, in name order.
func (r *Registry) Tools() []sdk.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]sdk.Tool, len(names))
	for i, n := range names {
		out[i] = r.tools[n].Value
	}
	return out
}

// Command returns the command named name (without its slash).
func (r *Registry) Command(name string) (sdk.Command, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.commands[name]
	return c.Value, ok
}

// CommandNames returns every command name, sorted.
func (r *Registry) CommandNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for n := range r.commands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Contributors returns every context contributor.
func (r *Registry) Contributors() []Owned[sdk.Contributor] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Owned[sdk.Contributor](nil), r.contributors...)
}

// Compactors returns every compaction strategy.
func (r *Registry) Compactors() []Owned[sdk.Compactor] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Owned[sdk.Compactor](nil), r.compactors...)
}

// Provider returns the provider id of plugin owner.
func (r *Registry) Provider(owner, id string) (sdk.Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.providers {
		if p.Owner == owner && p.Value.ID() == id {
			return p.Value, true
		}
	}
	return nil, false
}

// ProviderIDs returns the ids of the providers owner offers, sorted.
func (r *Registry) ProviderIDs(owner string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var ids []string
	for _, p := range r.providers {
		if p.Owner == owner {
			ids = append(ids, p.Value.ID())
		}
	}
	slices.Sort(ids)
	return ids
}

// ToolOwner returns the plugin that keeps the tool named name ("" for the
// host's own, or none).
func (r *Registry) ToolOwner(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[name].Owner
}

// Hooks returns the hooks that declared the point at, for decisions
// (decide true) or observations.
func (r *Registry) Hooks(at sdk.HookPoint, decide bool) []HookEntry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	want := at.String()
	var out []HookEntry
	for _, h := range r.hooks {
		points := h.Observe
		if decide {
			points = h.Decide
		}
		for _, p := range points {
			if p == want {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

// CallService routes a service call by key: from in-process host code, or
// from a plugin.
func (r *Registry) CallService(ctx context.Context, key, method string, params json.RawMessage) (json.RawMessage, error) {
	return r.CallServiceIf(ctx, key, method, params, nil)
}

// CallServiceIf is CallService, refused with may's error when may, if set,
// refuses the service's owner: the owner checked is the one called.
func (r *Registry) CallServiceIf(ctx context.Context, key, method string, params json.RawMessage, may func(owner string) error) (json.RawMessage, error) {
	r.mu.RLock()
	s, ok := r.services[key]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no plugin offers service %q", key)
	}
	if may != nil {
		if err := may(s.Owner); err != nil {
			return nil, err
		}
	}
	return s.Value.Call(ctx, method, params)
}

// reach orders the kinds of contribution by how much of the person's
// session they touch, most first: a provider hears everything and its
// calls are judged by the person's rules, a hook sees and decides on every
// call, a contributor writes into every request, a compactor rewrites the
// conversation. What a repository's plugin can touch is read first.
var reach = map[string]int{"provider": 0, "hook": 1, "contributor": 2, "compactor": 3, "service": 4, "command": 5, "tool": 6}

// ContributionsOf lists what one plugin contributes, for `bingo plugins`:
// "kind name", by reach and then name.
func (r *Registry) ContributionsOf(owner string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := []string{}
	for n, t := range r.tools {
		if t.Owner == owner {
			out = append(out, "tool "+n)
		}
	}
	for n, c := range r.commands {
		if c.Owner == owner {
			out = append(out, "command /"+n)
		}
	}
	for _, c := range r.contributors {
		if c.Owner == owner {
			out = append(out, "contributor "+c.Value.ID())
		}
	}
	for _, c := range r.compactors {
		if c.Owner == owner {
			out = append(out, "compactor "+c.Value.ID())
		}
	}
	for _, p := range r.providers {
		if p.Owner == owner {
			out = append(out, "provider "+owner+"/"+p.Value.ID())
		}
	}
	for _, h := range r.hooks {
		if h.Owner == owner {
			out = append(out, "hook "+h.Hook.ID()+" ("+strings.Join(append(append([]string{}, h.Decide...), h.Observe...), ", ")+")")
		}
	}
	for k, s := range r.services {
		if s.Owner == owner {
			out = append(out, "service "+k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ki, _, _ := strings.Cut(out[i], " ")
		kj, _, _ := strings.Cut(out[j], " ")
		if reach[ki] != reach[kj] {
			return reach[ki] < reach[kj]
		}
		return out[i] < out[j]
	})
	return out
}

// OwnNotice reports whether a contribution's failure deserves a notice of
// its own. A plugin that died already said so in its one death notice: a
// hook or contributor answering nothing because of it is part of that. A
// missed deadline is always the contribution's own.
func OwnNotice(err error) bool {
	return !errors.Is(err, sdk.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}
