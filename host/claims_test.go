package host

import (
	"context"
	"encoding/json"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// A tool's input is an object, as its schema says. Anything else is
// refused before a hook, the gate or the tool sees it; no input (or null)
// is the empty object.
func TestToolInputMustBeAnObject(t *testing.T) {
	var mu sync.Mutex
	var hooked, ran []string
	h, _ := newTestHost(t, settings.Default()) // no rule: the gate asks
	h.reg.AddTool("", toolFunc{"t", func(_ context.Context, c sdk.ToolCall) (sdk.ToolOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, string(c.Input))
		return textOut("ran"), nil
	}})
	h.reg.AddHook(registry.HookEntry{Decide: []string{"tool/before"}, Hook: hookFunc{"watch", func(_ context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, string(ev.Payload))
		return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
	}}})
	for in, want := range map[string]string{
		`[1,2]`:                              "t: the input must be a JSON object, not an array: [1,2]",
		`"s"`:                                `t: the input must be a JSON object, not a string: "s"`,
		`42`:                                 "t: the input must be a JSON object, not a number: 42",
		`true`:                               "t: the input must be a JSON object, not a boolean: true",
		`{"a":`:                              `t: the input is not JSON; want a JSON object: {"a":`,
		` [] `:                               "t: the input must be a JSON object, not an array: []",
		`"` + strings.Repeat("x", 200) + `"`: `t: the input must be a JSON object, not a string: "` + strings.Repeat("x", 78) + "…",
	} {
		ui := &fakeUI{approve: true}
		out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "t", Input: json.RawMessage(in)}, 1, ui)
		if err == nil || err.Error() != want || !out.IsError || out.Text() != want {
			t.Errorf("input %.20s: out = %+v, err = %v", in, out, err)
		}
		if len(ui.approvals) != 0 {
			t.Errorf("input %.20s reached the gate: %v", in, ui.approvals)
		}
	}
	if len(hooked)+len(ran) != 0 {
		t.Fatalf("refused input reached hooks %v or the tool %v", hooked, ran)
	}
	for _, in := range []string{``, `null`, ` {"a":1} `} {
		out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "t", Input: json.RawMessage(in)}, 1, &fakeUI{approve: true})
		if err != nil || out.Text() != "ran" {
			t.Fatalf("input %q: %+v %v", in, out, err)
		}
	}
	if !slices.Equal(ran, []string{`{}`, `{}`, ` {"a":1} `}) {
		t.Fatalf("the tool ran with %q", ran)
	}
}

// A hook redirects to a tool's input or a model request: an object. A
// redirect to anything else is ignored, with a notice.
func TestRedirectToANonObjectIsIgnored(t *testing.T) {
	h, n := newTestHost(t, withSettings(func(s *settings.Settings) { s.Permissions.Allow = []string{"*"} }), testPlugin)
	h.reg.AddHook(registry.HookEntry{Owner: "h", Decide: []string{"tool/before"}, Hook: hookFunc{"swap", func(context.Context, sdk.HookEvent) (sdk.HookDecision, error) {
		return sdk.HookDecision{Outcome: sdk.HookRedirect, Value: json.RawMessage(`["rm -rf ~"]`)}, nil
	}}})
	out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"hi"}`)}, 1, &fakeUI{})
	if err != nil || out.Text() != "hi" {
		t.Fatalf("%+v %v", out, err)
	}
	if !strings.Contains(n.text(), "hook swap redirected without a valid value (want a JSON object); ignored") {
		t.Fatalf("notices = %s", n.text())
	}
}

// A model's call ids may be missing (or repeated): the host names each call
// itself, so progress and questions still find their call, and the tool
// results still go back under the ids the model used.
func TestHostNamesToolCalls(t *testing.T) {
	var mu sync.Mutex
	var second []sdk.Message
	model := providerFunc{"m", func(_ context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
		if len(r.Messages) > 1 {
			mu.Lock()
			second = r.Messages
			mu.Unlock()
			emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "done"})
			return sdk.StreamEnd{}, nil
		}
		for i, c := range []struct{ name, args string }{
			{"plugin__testplugin__echo", `{"text":"hi"}`},
			{"plugin__testplugin__ask", `{"question":"ok?"}`},
		} {
			emit(sdk.StreamEvent{Kind: sdk.EventToolCall, ToolCall: &sdk.ToolCallDelta{Index: i, Name: c.name, ArgumentsDelta: c.args}})
		}
		return sdk.StreamEnd{}, nil
	}}
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.Plugin = "m/m"
		s.Permissions.Allow = []string{"*"}
	}), testPlugin, kit(&pluginkit.Plugin{Name: "m", Version: "1", Providers: []sdk.Provider{model}}))
	ui := &fakeUI{}
	if _, err := h.Turn(context.Background(), "go", ui); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ui.progress, []string{"plugin__testplugin__echo: echo: hi"}) {
		t.Fatalf("progress = %q", ui.progress)
	}
	var results []string
	for _, m := range second {
		if m.Role == sdk.RoleTool {
			results = append(results, m.ToolCallID+"="+m.Content)
		}
	}
	if !slices.Equal(results, []string{"=hi", "=yes"}) {
		t.Fatalf("tool results (model's id=content) = %q", results)
	}
}

// recorder is a hook that declares every point the host offers and
// records each one it is asked or told at.
type recorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (*recorder) ID() string { return "recorder" }

func (r *recorder) Decide(_ context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
	r.record("decide " + ev.Site + "/" + ev.Point)
	return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
}

func (r *recorder) Observe(_ context.Context, ev sdk.HookEvent) {
	r.record("observe " + ev.Site + "/" + ev.Point)
}

func (r *recorder) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[s] = true
}

// sdk.DecisionPoints() and sdk.ObservationPoints() are what a declaration is
// checked against: each is a point the host fires in a turn with a tool
// call. (That it fires no other, the compiler says: decide and observe
// take an sdk.HookPoint, and only the points those lists hold exist.)
func TestHookPointsAreTheOnesTheHostFires(t *testing.T) {
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.Plugin = "testplugin/scripted"
		s.Permissions.Allow = []string{"*"}
	}), testPlugin)
	rec := &recorder{seen: map[string]bool{}}
	entry := registry.HookEntry{Hook: rec}
	var want []string
	for _, p := range sdk.DecisionPoints() {
		entry.Decide = append(entry.Decide, p.String())
		want = append(want, "decide "+p.String())
	}
	for _, p := range sdk.ObservationPoints() {
		entry.Observe = append(entry.Observe, p.String())
		want = append(want, "observe "+p.String())
	}
	h.reg.AddHook(entry)
	if _, err := h.Turn(context.Background(), "say hi", &fakeUI{}); err != nil {
		t.Fatal(err)
	}
	h.observers.Wait()
	var seen []string
	for s := range rec.seen {
		seen = append(seen, s)
	}
	slices.Sort(seen)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("fired %q, offered %q", seen, want)
	}
}
