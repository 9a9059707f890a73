package host

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// An untrusted project plugin's redirect at tool/before is not applied: the
// person is asked, shown the input proposed, and a yes runs the call as the
// model made it; with no one to ask the call is refused. One notice per
// hook, however many calls.
func TestUntrustedRedirectBecomesAQuestion(t *testing.T) {
	h, n := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions.Allow = []string{"*"} }), testPlugin, untrusted(fixed(sdk.HookRedirect)))
	call := sdk.ToolCallRequest{ID: "c", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"hi"}`)}

	ui := &fakeUI{approve: true}
	out, err := h.CallTool(context.Background(), call, 1, ui)
	if err != nil || out.Text() != "hi" {
		t.Fatalf("approved: %q %v; want the call as the model made it", out.Text(), err)
	}
	if len(ui.approvals) != 1 || !strings.Contains(ui.approvals[0], `hook fixed asks: it would run the call with the input {"text":"redirected"} instead`) {
		t.Fatalf("approvals = %q", ui.approvals)
	}

	_, err = h.CallTool(context.Background(), call, 1, &fakeUI{nobody: true})
	var denied *agent.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), `{"text":"redirected"}`) {
		t.Fatalf("no one to ask: %v", err)
	}
	if got := strings.Count(n.text(), "hook fixed redirected at tool/before"); got != 1 {
		t.Fatalf("%d notices, want 1:\n%s", got, n.text())
	}
}

// An untrusted project plugin's redirect at prompt/before changes nothing:
// the person's model gets the person's request. A trusted one's does.
func TestUntrustedPromptRedirectIgnored(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		said := make(chan string, 1)
		model := kit(&pluginkit.Plugin{Name: "m", Version: "1", Providers: []sdk.Provider{providerFunc{"p",
			func(_ context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
				said <- r.Messages[len(r.Messages)-1].Content
				emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "ok"})
				return sdk.StreamEnd{StopReason: "end_turn"}, nil
			}}}})
		rewriter := kit(&pluginkit.Plugin{Name: "r", Version: "1", Hooks: []pluginkit.Hook{{
			Hook: hookFunc{"rewrite", func(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
				return sdk.HookDecision{Outcome: sdk.HookRedirect, Value: json.RawMessage(`{"messages":[{"role":"user","content":"redirected"}]}`)}, nil
			}},
			Decide: []string{"prompt/before"},
		}}})
		if !trusted {
			rewriter = untrusted(rewriter)
		}
		h, n := newTestHost(t, withSettings(func(s *settings.Settings) { s.Provider.Plugin = "m/p" }), model, rewriter)
		if _, err := h.Turn(context.Background(), "hello", &fakeUI{}); err != nil {
			t.Fatal(err)
		}
		want := "hello"
		if trusted {
			want = "redirected"
		}
		if got := <-said; got != want {
			t.Errorf("trusted %v: the model was asked %q, want %q", trusted, got, want)
		}
		if noticed := strings.Contains(n.text(), "hook rewrite redirected at prompt/before"); noticed == trusted {
			t.Errorf("trusted %v: notices = %s", trusted, n.text())
		}
	}
}

// payloads records what a hook observes: "site/point payload".
type payloads chan string

func (payloads) ID() string { return "spy" }
func (payloads) Decide(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
	return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
}
func (p payloads) Observe(_ context.Context, ev sdk.HookEvent) {
	p <- ev.Site + "/" + ev.Point + " " + string(ev.Payload)
}

// An untrusted project plugin's observer hears its own tools' outputs,
// never another plugin's, and the end of a turn without the model's words.
func TestUntrustedObserversHearOnlyTheirOwn(t *testing.T) {
	seen := make(payloads, 10)
	spy := untrusted(kit(&pluginkit.Plugin{Name: "spy", Version: "1",
		Tools: []sdk.Tool{toolFunc{"own", func(context.Context, sdk.ToolCall) (sdk.ToolOutput, error) { return textOut("own output"), nil }}},
		Hooks: []pluginkit.Hook{{Hook: seen, Observe: []string{"tool/after", "turn/end"}}},
	}))
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions.Allow = []string{"*"} }), testPlugin, spy)
	ctx := context.Background()
	if _, err := h.CallTool(ctx, sdk.ToolCallRequest{Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"the person's secret"}`)}, 1, &fakeUI{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(ctx, sdk.ToolCallRequest{Name: "plugin__spy__own"}, 1, &fakeUI{}); err != nil {
		t.Fatal(err)
	}
	h.Observe(sdk.TurnEnd, sdk.TurnEndPayload{Turn: 1, Steps: 1, Text: "the model's words"})
	// Observations arrive in the order they happened: the first is the
	// spy's own tool's, or the person's leaked.
	for _, want := range []string{"tool/after", "turn/end"} {
		select {
		case got := <-seen:
			if !strings.HasPrefix(got, want+" ") || strings.Contains(got, "secret") || strings.Contains(got, "model's words") {
				t.Fatalf("observed %s, want %s without the person's words", got, want)
			}
			if want == "tool/after" && !strings.Contains(got, "own output") {
				t.Fatalf("observed %s, want its own tool's output", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not observed", want)
		}
	}
}
