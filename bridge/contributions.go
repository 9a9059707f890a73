package bridge

import (
	"strconv"

	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Contributions are a plugin's proxies, built from its declaration. Only
// what the handshake declared exists: an undeclared capability is simply
// absent, so asking for it answers false.
type Contributions struct {
	Tools        []*proxy.Tool
	Commands     []*proxy.Command
	Contributors []*proxy.Contributor
	Compactors   []*proxy.Compactor
	Providers    []*proxy.Provider
	Hooks        []HookBinding
	Services     []*proxy.Service
}

// HookBinding is a hook with the points it declared. It is an sdk.Hook.
type HookBinding struct {
	*proxy.Hook
	DecidePoints  []string // "site/point"
	ObservePoints []string
}

// Contributions builds the proxies for the plugin's declaration as the
// host kept it (see readDeclaration, which refused the rest with notices).
func (p *Plugin) Contributions() Contributions {
	var c Contributions
	decl, ok := p.Declaration()
	if !ok {
		return c
	}
	for _, t := range decl.Tools {
		c.Tools = append(c.Tools, proxy.NewTool(p, p.opts.Name, t))
	}
	for _, cmd := range decl.Commands {
		c.Commands = append(c.Commands, proxy.NewCommand(p, cmd))
	}
	for _, d := range decl.Contributors {
		c.Contributors = append(c.Contributors, proxy.NewContributor(p, d.ID))
	}
	for _, d := range decl.Compactors {
		c.Compactors = append(c.Compactors, proxy.NewCompactor(p, d.ID))
	}
	for _, d := range decl.Providers {
		c.Providers = append(c.Providers, proxy.NewProvider(p, d.ID, p.streamID))
	}
	for _, d := range decl.Hooks {
		c.Hooks = append(c.Hooks, HookBinding{Hook: proxy.NewHook(p, d.ID), DecidePoints: d.Decide, ObservePoints: d.Observe})
	}
	for _, d := range decl.Services {
		c.Services = append(c.Services, proxy.NewService(p, d.Key))
	}
	return c
}

var _ sdk.Hook = HookBinding{}

func (p *Plugin) streamID() string {
	return p.opts.Name + "-" + strconv.FormatUint(p.nextStream.Add(1), 10)
}
