package pluginkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Plugin is everything one plugin contributes. Fill it in and call Main (or
// Serve); the handshake's declaration is derived from these values, so what
// a plugin declares and what it serves cannot drift apart.
//
// A Plugin must not be changed while it is being served.
type Plugin struct {
	// Name must equal the manifest's name (and its directory's); the host
	// refuses a handshake that names another plugin.
	Name    string
	Version string

	Tools        []sdk.Tool
	Commands     []sdk.Command
	Contributors []sdk.Contributor
	Compactors   []sdk.Compactor
	// Providers are declared with their models when they have a
	// Models() []string method (see ModelLister).
	Providers []sdk.Provider
	Hooks     []Hook
	Services  []sdk.Service

	// Initialize, if set, sees the handshake params (config, env) before the
	// plugin answers; an error fails the handshake, and every later request
	// with it.
	Initialize func(ctx context.Context, p protocol.InitializeParams) error
}

// ModelLister is a provider that declares the models it serves: the
// person's settings choose one (provider.model), and it arrives as the
// request's Model.
type ModelLister interface {
	Models() []string
}

// Hook is an sdk.Hook with the points it wants. The wire declares them in
// the handshake because the host only asks a hook about the points it
// declared.
type Hook struct {
	sdk.Hook
	// Decide lists the "site/point" decision points the hook answers, e.g.
	// "tool/before".
	Decide []string
	// Observe lists the "site/point" observation points it wants to hear
	// about, e.g. "tool/after", "turn/end".
	Observe []string
}

// index is a Plugin checked once and looked up by name: what Serve
// dispatches on and what initialize declares.
type index struct {
	tools        map[string]sdk.Tool
	commands     map[string]sdk.Command
	contributors map[string]sdk.Contributor
	compactors   map[string]sdk.Compactor
	providers    map[string]sdk.Provider
	hooks        map[string]sdk.Hook
	services     map[string]sdk.Service
	decl         protocol.InitializeResult
}

// newIndex validates p: every value present, every name non-empty and
// unique within its kind, and no service under the host's reserved key.
// Errors come from here, at start, rather than as a confusing handshake.
func newIndex(p *Plugin) (*index, error) {
	if p.Name == "" {
		return nil, errors.New("pluginkit: the plugin has no Name")
	}
	x := &index{hooks: map[string]sdk.Hook{}}
	var err error
	errs := []error{}
	check := func(e error) { errs = append(errs, e) }
	x.tools, err = byName("tool", p.Tools, func(t sdk.Tool) string { return t.Spec().Name })
	check(err)
	x.commands, err = byName("command", p.Commands, func(c sdk.Command) string { return c.Spec().Name })
	check(err)
	x.contributors, err = byName("contributor", p.Contributors, sdk.Contributor.ID)
	check(err)
	x.compactors, err = byName("compactor", p.Compactors, sdk.Compactor.ID)
	check(err)
	x.providers, err = byName("provider", p.Providers, sdk.Provider.ID)
	check(err)
	x.services, err = byName("service", p.Services, sdk.Service.Key)
	check(err)
	if x.services[protocol.HostServiceKey] != nil {
		check(fmt.Errorf("pluginkit: the service key %q is the host's own", protocol.HostServiceKey))
	}
	for i, h := range p.Hooks {
		switch {
		case h.Hook == nil:
			check(fmt.Errorf("pluginkit: hook %d is nil", i))
		case h.Hook.ID() == "":
			check(fmt.Errorf("pluginkit: hook %d has no name", i))
		case x.hooks[h.Hook.ID()] != nil:
			check(fmt.Errorf("pluginkit: two hooks are called %q", h.Hook.ID()))
		default:
			x.hooks[h.Hook.ID()] = h.Hook
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// Declared in the order registered, so a handshake is reproducible.
	d := protocol.InitializeResult{Protocol: protocol.Version, Name: p.Name, Version: p.Version}
	for _, t := range p.Tools {
		d.Tools = append(d.Tools, t.Spec())
	}
	for _, c := range p.Commands {
		d.Commands = append(d.Commands, c.Spec())
	}
	for _, c := range p.Contributors {
		d.Contributors = append(d.Contributors, protocol.ContributorDecl{ID: c.ID()})
	}
	for _, c := range p.Compactors {
		d.Compactors = append(d.Compactors, protocol.CompactorDecl{ID: c.ID()})
	}
	for _, pr := range p.Providers {
		pd := protocol.ProviderDecl{ID: pr.ID()}
		if ml, ok := pr.(ModelLister); ok {
			pd.Models = ml.Models()
		}
		d.Providers = append(d.Providers, pd)
	}
	for _, h := range p.Hooks {
		d.Hooks = append(d.Hooks, protocol.HookDecl{ID: h.Hook.ID(), Decide: h.Decide, Observe: h.Observe})
	}
	for _, s := range p.Services {
		d.Services = append(d.Services, protocol.ServiceDecl{Key: s.Key()})
	}
	x.decl = d
	return x, nil
}

// byName indexes vs by name, refusing nil values, empty names and
// duplicates.
func byName[T comparable](kind string, vs []T, name func(T) string) (map[string]T, error) {
	m := make(map[string]T, len(vs))
	var zero T
	for i, v := range vs {
		if v == zero {
			return nil, fmt.Errorf("pluginkit: %s %d is nil", kind, i)
		}
		n := name(v)
		if n == "" {
			return nil, fmt.Errorf("pluginkit: %s %d has no name", kind, i)
		}
		if _, dup := m[n]; dup {
			return nil, fmt.Errorf("pluginkit: two %ss are called %q", kind, n)
		}
		m[n] = v
	}
	return m, nil
}
