package host

import (
	"context"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// modelsProvider answers with the model it was asked for, and declares
// models.
type modelsProvider struct {
	providerFunc
	models []string
}

func (m modelsProvider) Models() []string { return m.models }

// provider.model chooses among the plugin provider's declared models and
// reaches provider/stream as the request's model; a model it does not
// declare is an error naming those it does.
func TestProviderModelChoice(t *testing.T) {
	echoModel := func(id string, models ...string) sdk.Provider {
		return modelsProvider{providerFunc{id, func(_ context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
			emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "model=" + r.Model})
			return sdk.StreamEnd{StopReason: "end_turn"}, nil
		}}, models}
	}
	plug := kit(&pluginkit.Plugin{Name: "scripted-model", Version: "1",
		Providers: []sdk.Provider{echoModel("model", "fast", "smart"), echoModel("bare")}})
	choose := func(id, model string) settings.Settings {
		return withSettings(func(s *settings.Settings) {
			s.Provider = settings.ProviderChoice{Plugin: "scripted-model/" + id, Model: model}
		})
	}
	for _, tc := range []struct{ id, model, text, err string }{
		{"model", "fast", "model=fast", ""},
		{"model", "smart", "model=smart", ""},
		{"model", "", "model=", ""}, // no choice: the provider's default
		{"model", "huge", "", `provider.model is "huge", which the provider scripted-model/model does not declare; its models: fast, smart`},
		{"bare", "fast", "", `provider.model is "fast", but the provider scripted-model/bare declares no models`},
	} {
		h, _ := newTestHost(t, choose(tc.id, tc.model), plug)
		res, err := h.Turn(context.Background(), "hi", &fakeUI{})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s/%s: err = %v, want %q", tc.id, tc.model, err, tc.err)
		case tc.err == "" && (err != nil || res.Text != tc.text):
			t.Errorf("%s/%s: %q, %v; want %q", tc.id, tc.model, res.Text, err, tc.text)
		}
	}
}
