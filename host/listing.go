package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Plugins describes every plugin found, in name order, each followed by
// the copies it shadows.
func (h *Host) Plugins() []PluginInfo {
	var out []PluginInfo
	for _, l := range h.plugins {
		info := h.info(l.m)
		info.Status = "failed"
		info.Isolation = l.isolation
		if l.log != nil {
			info.Log = l.log.Path()
		}
		switch {
		case errors.Is(l.err, errUntrusted):
			info.Status = "not started"
			info.Error = h.trust.why[l.m.Name]
		case l.err != nil:
			info.Error = l.err.Error()
		case l.plugin != nil:
			info.Status = l.plugin.Status()
			info.Contributes, info.ToolDefinitionBytes = h.contributions(l.m.Name)
		}
		out = append(out, info)
		for _, sh := range l.m.Shadows {
			hidden := h.info(sh)
			hidden.Status = "shadowed"
			hidden.Error = "by the " + l.m.Layer + " layer's " + l.m.Name + " (" + l.m.Root + ")"
			out = append(out, hidden)
		}
		if m := h.held[l.m.Name]; m != nil {
			back := h.info(m)
			back.Status = "held back"
			back.Error = fmt.Sprintf("your own %s (%s) keeps the name until you trust this project; %s", l.m.Name, l.m.Root, howToTrust(h.trust.root))
			out = append(out, back)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// contributions lists what the plugin named owner contributes, its
// tools a deny rule covers marked "(denied)", and what the definitions of
// the others cost a model request.
func (h *Host) contributions(owner string) (list []string, toolBytes int) {
	list = h.reg.ContributionsOf(owner)
	for i, c := range list {
		name, ok := strings.CutPrefix(c, "tool ")
		if !ok {
			continue
		}
		if v, _ := h.gate.Decide(name); v == gate.Deny {
			list[i] += " (denied)"
		} else if t, ok := h.reg.Tool(name); ok {
			toolBytes += agent.DefinitionSize(t.Spec())
		}
	}
	return list, toolBytes
}

// info describes m as found, before anything is known of how it ran.
func (h *Host) info(m *manifest.Manifest) PluginInfo {
	info := PluginInfo{Name: m.Name, Version: m.Version, Layer: m.Layer, Dir: m.Root, Asks: m.Permissions.String(),
		Transport: m.Entry.Transport(), Protocol: m.Entry.Protocol, Contributes: []string{}}
	if info.Protocol == "" {
		info.Protocol = manifest.ProtocolBingo
	}
	if m.Layer == manifest.LayerDir {
		for _, dir := range h.cfg.TrustedThisRun {
			if within(m.Root, filepath.Clean(dir)) {
				info.Trust = "this run"
			}
		}
	}
	if m.Layer == manifest.LayerProject {
		info.Trust = "untrusted"
		if h.trust.trusted(m) {
			info.Trust = "trusted"
		} else if m.Entry.Transport() == manifest.TransportWasm {
			info.Trust = "untrusted (sandboxed)"
		}
	}
	return info
}
