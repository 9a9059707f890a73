package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/openai"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ErrNoProvider is the error of a turn with no model provider configured.
var ErrNoProvider = errors.New(`no model provider is configured: set "provider": {"openai": {"baseURL": …, "model": …, "apiKeyEnv": …}} or "provider": {"plugin": "<plugin>/<provider>"} in ~/.bingo/settings.json`)

// notInForce says, after a message about a setting that is missing, that
// a settings file was skipped for an error: the person may well have set
// it there ("" when every file applied).
func (h *Host) notInForce() string {
	if len(h.skipped) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s was skipped for the error shown above, so nothing it sets is in force: fix it first)", strings.Join(h.skipped, " and "))
}

// Provider returns the provider the settings choose.
func (h *Host) Provider() (sdk.Provider, error) {
	choice := h.settings.Provider
	if plugin, id, ok := choice.PluginProvider(); ok {
		p, found := h.reg.Provider(plugin, id)
		if !found {
			if ids := h.reg.ProviderIDs(plugin); len(ids) > 0 {
				return nil, fmt.Errorf("the configured provider %s/%s is not one plugin %s offers; it offers: %s", plugin, id, plugin, strings.Join(ids, ", "))
			}
			return nil, fmt.Errorf("the configured provider %s/%s is not offered by any loaded plugin (bingo plugins lists what loaded)", plugin, id)
		}
		// The provider hears the system prompt, every message and every
		// tool result, and the person's allow rules judge the calls it
		// makes: the person's settings name it for their own plugin, not
		// for a repository's plugin that happens to bear the name.
		if h.trust.untrustedOwner(plugin) {
			return nil, fmt.Errorf("the configured provider %s/%s is offered only by this repository's plugin %s, which you have not trusted; install your own %s, or %s",
				plugin, id, plugin, plugin, howToTrust(h.trust.root))
		}
		if choice.Model == "" {
			return p, nil
		}
		models := h.declaredModels(plugin, id)
		if !slices.Contains(models, choice.Model) {
			if len(models) == 0 {
				return nil, fmt.Errorf("provider.model is %q, but the provider %s/%s declares no models to choose among", choice.Model, plugin, id)
			}
			return nil, fmt.Errorf("provider.model is %q, which the provider %s/%s does not declare; its models: %s", choice.Model, plugin, id, strings.Join(models, ", "))
		}
		return modelProvider{p, choice.Model}, nil
	}
	if o := choice.OpenAI; o != nil {
		// Held to the deadlines and limits a provider plugin is held to,
		// with the same notices: a built-in provider is no reason for a
		// stalled or endless stream to hang the turn or fill the memory.
		return openai.New("openai", openai.Config{BaseURL: o.BaseURL, Model: o.Model, APIKeyEnv: o.APIKeyEnv,
			Deadlines: h.settings.Deadlines, Limits: h.settings.Limits,
			Notify: func(msg string) { h.cfg.Notify(bridge.Notice{Level: "warn", Message: msg}) }})
	}
	if len(h.skipped) > 0 {
		return nil, fmt.Errorf("%w%s", ErrNoProvider, h.notInForce())
	}
	return nil, ErrNoProvider
}

// declaredModels are the models plugin's provider id declared.
func (h *Host) declaredModels(plugin, id string) []string {
	for _, l := range h.plugins {
		if l.m.Name != plugin || l.plugin == nil {
			continue
		}
		decl, _ := l.plugin.Declaration()
		for _, pd := range decl.Providers {
			if pd.ID == id {
				return pd.Models
			}
		}
	}
	return nil
}

// modelProvider sends every request to the model the settings chose.
type modelProvider struct {
	sdk.Provider
	model string
}

func (m modelProvider) Stream(ctx context.Context, req sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	req.Model = m.model
	return m.Provider.Stream(ctx, req, emit)
}
