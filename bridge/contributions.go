package bridge

import (
	"fmt"
	"strconv"

	"github.com/bingo/bingo-plugin-rpc/protocol"
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

// Contributions builds the proxies for what the plugin declared at its
// first handshake. A declaration the host refuses (a tool name it cannot
// offer, a duplicate, the reserved service key) costs a notice and that
// one contribution, never the plugin.
func (p *Plugin) Contributions() Contributions {
	var c Contributions
	decl, ok := p.Declaration()
	if !ok {
		return c
	}
	refuse := func(format string, args ...any) {
		p.opts.Notify(Notice{Plugin: p.opts.Name, Level: "warn", Message: fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	once := func(kind, id string) bool {
		if id == "" {
			refuse("a %s has no name; ignored", kind)
			return false
		}
		if seen[kind+"\x00"+id] {
			refuse("%s %q is declared twice; the first wins", kind, id)
			return false
		}
		seen[kind+"\x00"+id] = true
		return true
	}
	for _, t := range decl.Tools {
		if err := proxy.CheckToolName(p.opts.Name, t.Name); err != nil {
			refuse("tool not offered: %v", err)
			continue
		}
		if once("tool", t.Name) {
			c.Tools = append(c.Tools, proxy.NewTool(p, p.opts.Name, t))
		}
	}
	for _, cmd := range decl.Commands {
		if once("command", cmd.Name) {
			c.Commands = append(c.Commands, proxy.NewCommand(p, cmd))
		}
	}
	for _, d := range decl.Contributors {
		if once("contributor", d.ID) {
			c.Contributors = append(c.Contributors, proxy.NewContributor(p, d.ID))
		}
	}
	for _, d := range decl.Compactors {
		if once("compactor", d.ID) {
			c.Compactors = append(c.Compactors, proxy.NewCompactor(p, d.ID))
		}
	}
	for _, d := range decl.Providers {
		if once("provider", d.ID) {
			c.Providers = append(c.Providers, proxy.NewProvider(p, d.ID, p.streamID))
		}
	}
	for _, d := range decl.Hooks {
		if once("hook", d.ID) {
			c.Hooks = append(c.Hooks, HookBinding{Hook: proxy.NewHook(p, d.ID), DecidePoints: d.Decide, ObservePoints: d.Observe})
		}
	}
	for _, d := range decl.Services {
		if d.Key == protocol.HostServiceKey {
			refuse("service key %q is reserved for the host; not offered", d.Key)
			continue
		}
		if once("service", d.Key) {
			c.Services = append(c.Services, proxy.NewService(p, d.Key))
		}
	}
	return c
}

var _ sdk.Hook = HookBinding{}

func (p *Plugin) streamID() string {
	return p.opts.Name + "-" + strconv.FormatUint(p.nextStream.Add(1), 10)
}
