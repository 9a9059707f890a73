package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/host/declcache"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// ConfigEnv is the variable that carries the person's plugins.<name> slice
// (as JSON) to an exec MCP server, which MCP gives no other standard place
// for; the translator also offers it in the client's experimental "bingo"
// capability, which a wasm server reads.
const ConfigEnv = "BINGO_PLUGIN_CONFIG"

// mcp puts the MCP translator in front of an MCP server's transport, with
// what the person allows the server (mcp.<name> settings). A project's
// server the person has not trusted gets none of what was allowed for its
// name. What it allows is a grant line of the start, since whether the
// server's resources are offered changes its declaration (the cache's key).
// root is the directory offered as its one root ("" none).
func (h *Host) mcp(m *manifest.Manifest, tr transport.Transport, trusted bool, root string, log io.Writer, start *declcache.Start) transport.Transport {
	var allowed = h.settings.MCP[m.Name]
	if !trusted {
		allowed.Resources, allowed.Sampling = false, false
	}
	start.Grants = append(start.Grants, fmt.Sprintf("mcp resources=%v sampling=%v", allowed.Resources, allowed.Sampling))
	if root != "" {
		// The server is offered the working directory as its root, which
		// it may well declare by (a file system server's tools, a
		// project's prompts): its declaration is keyed by that directory,
		// not the project's.
		start.Dir = root
	}
	cfg := mcpbridge.Config{Name: m.Name, Version: m.Version, Log: log, Resources: allowed.Resources, Root: root, Deadlines: h.settings.Deadlines, Trace: h.cfg.Trace}
	if allowed.Sampling {
		// One call of a tool may not cost more model responses than a
		// turn may take, each no longer than the person allows.
		cfg.Sample, cfg.MaxSamples, cfg.MaxTokens = h.sample, h.settings.Turn.MaxSteps, allowed.MaxTokens
	}
	return mcpbridge.Wrap(tr, cfg)
}

// withConfig is env with ConfigEnv set to config (and any value it had
// there dropped); no config leaves it unset.
func withConfig(env []string, config []byte) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, ConfigEnv+"=") {
			out = append(out, kv)
		}
	}
	if len(config) > 0 {
		out = append(out, ConfigEnv+"="+string(config))
	}
	return out
}

// sample answers an MCP server's sampling request with the configured
// provider, held to the hooks at prompt/before like a turn's own model
// request. No one is there to answer a hook that asks, so that is a
// refusal.
func (h *Host) sample(ctx context.Context, r mcpbridge.SampleRequest) (mcpbridge.SampleResult, error) {
	var res mcpbridge.SampleResult
	provider, err := h.Provider()
	if err != nil {
		return res, err
	}
	req := sdk.ProviderRequest{System: r.System, Messages: r.Messages, MaxTokens: r.MaxTokens}
	switch d, hook := h.Decide(ctx, sdk.PromptBefore, req); d.Outcome {
	case sdk.HookBlock, sdk.HookDeny, sdk.HookAsk:
		return res, fmt.Errorf("the sampling request was stopped by hook %s: %s", hook, d.Reason)
	}
	var events []sdk.StreamEvent
	end, err := provider.Stream(ctx, req, func(e sdk.StreamEvent) { events = append(events, e) })
	if err != nil {
		return res, fmt.Errorf("model provider %s: %w", provider.ID(), err)
	}
	msg := sdk.Assemble(events)
	if len(msg.ToolCalls) > 0 && msg.Content == "" {
		return res, errors.New("the model answered the sampling request with tool calls, which bingo does not run for an MCP server")
	}
	model := end.Model
	if model == "" {
		model = h.modelName()
	}
	return mcpbridge.SampleResult{Text: msg.Content, Model: model}, nil
}

// modelName names the model the configured provider runs, as a sampling
// server is told it when the provider did not say which answered: the
// model the settings choose, else the plugin's provider
// ("<plugin>/<provider>"), which chose its own.
func (h *Host) modelName() string {
	c := h.settings.Provider
	switch {
	case c.OpenAI != nil:
		return c.OpenAI.Model
	case c.Model != "":
		return c.Model
	}
	return c.Plugin
}
