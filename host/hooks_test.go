package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// fixed is a hook plugin answering one outcome at tool/before.
func fixed(outcome sdk.HookOutcome) memPlugin {
	return kit(&pluginkit.Plugin{Name: "h", Version: "1", Hooks: []pluginkit.Hook{{
		Hook: hookFunc{"fixed", func(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
			d := sdk.HookDecision{Outcome: outcome, Reason: "because"}
			if outcome == sdk.HookRedirect {
				d.Value = json.RawMessage(`{"text":"redirected"}`)
			}
			return d, nil
		}},
		Decide: []string{"tool/before"},
	}}})
}

// The verdict plane stays in-process: whatever a hook answers, a call the
// gate denies is denied, and a call the gate would ask about is asked about.
func TestNoHookOutcomeWidensTheGate(t *testing.T) {
	outcomes := []sdk.HookOutcome{sdk.HookContinue, sdk.HookDeny, sdk.HookAsk, sdk.HookBlock, sdk.HookRedirect}
	gates := map[string]settings.Permissions{
		"deny":  {Deny: []string{"plugin__testplugin__echo"}, Allow: []string{"plugin__testplugin__echo"}},
		"ask":   {},
		"allow": {Allow: []string{"plugin__testplugin__echo"}},
	}
	for gname, perms := range gates {
		for _, o := range outcomes {
			t.Run(fmt.Sprintf("gate %s, hook %s", gname, o), func(t *testing.T) {
				h, _ := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions = perms }), testPlugin, fixed(o))
				ui := &fakeUI{approve: true}
				out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "c", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"hi"}`)}, 1, ui)
				ran := err == nil
				asked := len(ui.approvals) > 0
				switch {
				case gname == "deny" && ran:
					t.Fatalf("hook %s let through a call the gate denies", o)
				case gname == "ask" && ran && !asked:
					t.Fatalf("hook %s skipped the question the gate would ask", o)
				case (o == sdk.HookDeny || o == sdk.HookBlock) && ran:
					t.Fatalf("hook %s did not stop the call", o)
				case o == sdk.HookAsk && gname != "deny" && !asked:
					t.Fatal("hook ask must put the call to the person even when a rule allows it")
				case o == sdk.HookRedirect && ran && out.Text() != "redirected":
					t.Fatalf("redirect ignored: %q", out.Text())
				case gname == "allow" && (o == sdk.HookContinue || o == sdk.HookRedirect) && (!ran || asked):
					t.Fatalf("an allowed call with hook %s: ran=%v asked=%v err=%v", o, ran, asked, err)
				}
				var blocked *agent.BlockedError
				if o == sdk.HookBlock && !errors.As(err, &blocked) {
					t.Fatalf("block must be a agent.BlockedError: %v", err)
				}
			})
		}
	}
}

func TestHookDenyStopsTheCallWithItsReason(t *testing.T) {
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions.Allow = []string{"*"} }), testPlugin)
	_, err := h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "c", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"forbidden"}`)}, 1, &fakeUI{})
	var denied *agent.DeniedError
	if !errors.As(err, &denied) || err.Error() != "plugin__testplugin__echo denied: hook guard: guard says no" {
		t.Fatalf("err = %v", err)
	}
	out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "d", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"fine"}`)}, 1, &fakeUI{})
	if err != nil || out.Text() != "fine" {
		t.Fatalf("%v %v", out, err)
	}
}

// A hook's question that no one can answer is refused with what would
// help (a terminal), never with an allow rule: the hook asks whatever the
// rules allow.
func TestHookAskWithNoOneToAnswer(t *testing.T) {
	asks := kit(&pluginkit.Plugin{Name: "h", Version: "1", Hooks: []pluginkit.Hook{{
		Hook: hookFunc{"careful", func(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
			return sdk.HookDecision{Outcome: sdk.HookAsk, Reason: "sure?"}, nil
		}},
		Decide: []string{"tool/before", "prompt/before"},
	}}})
	const want = "hook careful asks: sure?; no one can answer it here (--print, or no terminal): run bingo on a terminal to answer it"
	for _, allow := range [][]string{nil, {"*"}} {
		h, _ := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions.Allow = allow }), testPlugin, asks)
		_, err := h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "c", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"hi"}`)}, 1, &fakeUI{nobody: true})
		var denied *agent.DeniedError
		if !errors.As(err, &denied) || denied.Reason != want {
			t.Errorf("allow %q: err = %v\nwant the reason %q", allow, err, want)
		}
	}
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) { s.Provider.Plugin = "testplugin/scripted" }), testPlugin, asks)
	if _, err := h.Turn(context.Background(), "hi", &fakeUI{nobody: true}); err == nil || err.Error() != "the model request was not sent: "+want {
		t.Errorf("prompt site: err = %v", err)
	}
}

func TestHookPastDeadlineDecidesNothing(t *testing.T) {
	slow := kit(&pluginkit.Plugin{Name: "h", Version: "1", Hooks: []pluginkit.Hook{{
		Hook: hookFunc{"slow", func(ctx context.Context, _ sdk.HookEvent) (sdk.HookDecision, error) {
			<-ctx.Done()
			return sdk.HookDecision{Outcome: sdk.HookDeny}, nil
		}},
		Decide: []string{"tool/before"},
	}}})
	h, n := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Permissions.Allow = []string{"*"}
		s.Deadlines.Hook = 100 * time.Millisecond
		s.Deadlines.Grace = time.Hour
	}), testPlugin, slow)
	out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "c", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"x"}`)}, 1, &fakeUI{})
	if err != nil || out.Text() != "x" {
		t.Fatalf("a late hook must decide nothing: %v %v", out, err)
	}
	if !strings.Contains(n.text(), "hook slow decided nothing: plugin h: hook/decide did not answer within 100ms") {
		t.Fatalf("notices = %s", n.text())
	}
}

func TestHookAtThePromptSite(t *testing.T) {
	deny := kit(&pluginkit.Plugin{Name: "h", Version: "1", Hooks: []pluginkit.Hook{{
		Hook: hookFunc{"nosecrets", func(_ context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
			if strings.Contains(string(ev.Payload), "password") {
				return sdk.HookDecision{Outcome: sdk.HookBlock, Reason: "no secrets to the model"}, nil
			}
			return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
		}},
		Decide: []string{"prompt/before"},
	}}})
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.Plugin = "testplugin/scripted"
		s.Permissions.Allow = []string{"*"}
	}), testPlugin, deny)
	_, err := h.Turn(context.Background(), "my password is x", &fakeUI{})
	if err == nil || !strings.Contains(err.Error(), "stopped by hook nosecrets: no secrets to the model") {
		t.Fatalf("err = %v", err)
	}
}

func TestHooksObserve(t *testing.T) {
	seen := make(chan string, 10)
	obs := kit(&pluginkit.Plugin{Name: "o", Version: "1", Hooks: []pluginkit.Hook{{
		Hook:    observer{seen},
		Observe: []string{"tool/after", "turn/end"},
	}}})
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.Plugin = "testplugin/scripted"
		s.Permissions.Allow = []string{"*"}
	}), testPlugin, obs)
	if _, err := h.Turn(context.Background(), "hi", &fakeUI{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tool/after", "turn/end"} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("observed %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not observed", want)
		}
	}
}

type observer struct{ seen chan string }

func (observer) ID() string { return "obs" }
func (observer) Decide(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
	return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
}
func (o observer) Observe(_ context.Context, ev sdk.HookEvent) { o.seen <- ev.Site + "/" + ev.Point }

// dies ends its plugin's instance from inside a handler.
func dies(ctx context.Context) { pluginkit.HostFrom(ctx).Exit(errors.New("crash")); <-ctx.Done() }

type dyingService struct{}

func (dyingService) Key() string { return "dying" }
func (dyingService) Call(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	dies(ctx)
	return nil, ctx.Err()
}

// A plugin that dies inside any crossing costs that crossing's answer and
// one notice; the host goes on, and the next use respawns it.
func TestDeathInEveryCrossing(t *testing.T) {
	d := kit(&pluginkit.Plugin{Name: "d", Version: "1",
		Contributors: []sdk.Contributor{contributorFunc{"c", func(ctx context.Context, _ sdk.Query) ([]sdk.Piece, error) { dies(ctx); return nil, nil }}},
		Compactors: []sdk.Compactor{compactorFunc{"k", func(ctx context.Context, _ sdk.CompactRequest) (sdk.Compaction, error) {
			dies(ctx)
			return sdk.Compaction{}, nil
		}}},
		Hooks: []pluginkit.Hook{{Hook: hookFunc{"h", func(ctx context.Context, _ sdk.HookEvent) (sdk.HookDecision, error) {
			dies(ctx)
			return sdk.HookDecision{Outcome: sdk.HookDeny}, nil
		}}, Decide: []string{"tool/before"}}},
		Services: []sdk.Service{dyingService{}},
	})
	h, n := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.Plugin = "testplugin/scripted"
		s.Permissions.Allow = []string{"*"}
	}), d, testPlugin) // d first: its compactor is the one asked
	deaths := func() int { return strings.Count(n.text(), "plugin d: stopped") }

	// contributor and hook die during the turn: the turn still completes.
	res, err := h.Turn(context.Background(), "hi", &fakeUI{})
	if err != nil || res.Text != "done: hi" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	// Two deaths in a row: the backoff now holds the plugin down, and the
	// compactor answering nothing means the built-in compaction runs.
	h.Compact(context.Background())
	if !strings.Contains(n.text(), "compactor k failed") {
		t.Fatalf("notices = %s", n.text())
	}
	// The service answers nothing either; the caller hears why.
	if _, err := h.Registry().CallService(context.Background(), "dying", "x", nil); !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("service: %v", err)
	}
	h.Close()
	if got := deaths(); got != 2 {
		t.Fatalf("want one notice per death (2), got %d:\n%s", got, n.text())
	}
	if !strings.Contains(n.text(), "compactor k failed (plugin d is down; next restart in") {
		t.Fatalf("notices = %s", n.text())
	}
}
