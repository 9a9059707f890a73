package schema

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// hostPayloads are payloads built as the host builds them (host/agent,
// host/hooks.go): the same types, filled as a turn fills them.
func hostPayloads() map[sdk.HookPoint]any {
	call := sdk.ToolCall{ID: "call-1", Name: "plugin__kit__echo", Input: json.RawMessage(`{"text":"hi"}`),
		Cwd: "/home/me/project", Session: "s1", Turn: 1}
	return map[sdk.HookPoint]any{
		sdk.ToolBefore: call,
		sdk.PromptBefore: sdk.ProviderRequest{
			System:   "You are bingo.",
			Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "say hi"}},
			Tools:    []sdk.ToolSpec{{Name: "plugin__kit__echo", Description: "Echoes its text.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		},
		sdk.ToolAfter: sdk.ToolAfterPayload{Call: call, Output: sdk.ToolOutput{Parts: []sdk.Part{{Type: "text", Text: "hi"}}}},
		sdk.TurnEnd:   sdk.TurnEndPayload{Turn: 1, Steps: 2, Text: "It said hi."},
	}
}

// hookLine is the hook/decide request or hook/observe notification that
// carries payload at point at.
func hookLine(t *testing.T, at sdk.HookPoint, decide bool, payload any) []byte {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	if decide {
		return requestLine(t, 1, protocol.MethodHookDecide, protocol.HookDecideParams{ID: "h", Site: at.Site, Point: at.Point, Payload: raw})
	}
	return notificationLine(t, protocol.NotifyHookObserve, protocol.HookObserve{ID: "h", Site: at.Site, Point: at.Point, Payload: raw})
}

// Every point the host fires has a payload type, and nothing else does.
func TestEveryHookPointHasAPayloadType(t *testing.T) {
	var got, want []string
	for at := range sdk.HookPayloads() {
		got = append(got, at.String())
	}
	for _, at := range slices.Concat(sdk.DecisionPoints(), sdk.ObservationPoints()) {
		want = append(want, at.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("sdk.HookPayloads names %v; the host fires %v", got, want)
	}
}

// The schema states each point's payload: the host's payloads validate, in
// a line of the method that carries them.
func TestHookPayloadsValidatePerPoint(t *testing.T) {
	s := schemaUnderTest(t)
	payloads := hostPayloads()
	for _, l := range []struct {
		decide bool
		points []sdk.HookPoint
	}{{true, sdk.DecisionPoints()}, {false, sdk.ObservationPoints()}} {
		for _, at := range l.points {
			line := hookLine(t, at, l.decide, payloads[at])
			if err := validate(s.root, line); err != nil {
				t.Errorf("%s: the host's payload does not validate: %s\n%v", at, line, err)
			}
		}
	}
}

// A payload that is not its point's fails, as does a point the host does
// not fire or one of the other kind.
func TestWrongHookPayloadsFail(t *testing.T) {
	s := schemaUnderTest(t)
	p := hostPayloads()
	for name, c := range map[string]struct {
		at      sdk.HookPoint
		decide  bool
		payload any
	}{
		"tool/before with a turn's end":   {sdk.ToolBefore, true, p[sdk.TurnEnd]},
		"tool/before with null":           {sdk.ToolBefore, true, nil},
		"tool/before without callId":      {sdk.ToolBefore, true, map[string]any{"name": "t", "input": map[string]any{}}},
		"prompt/before with a tool call":  {sdk.PromptBefore, true, p[sdk.ToolBefore]},
		"tool/after with the bare call":   {sdk.ToolAfter, false, p[sdk.ToolBefore]},
		"tool/after without output":       {sdk.ToolAfter, false, map[string]any{"call": p[sdk.ToolBefore]}},
		"turn/end with null":              {sdk.TurnEnd, false, nil},
		"turn/end with steps as a string": {sdk.TurnEnd, false, map[string]any{"turn": 1, "steps": "2", "text": ""}},
		"turn/end as a decision":          {sdk.TurnEnd, true, p[sdk.TurnEnd]},
		"tool/before as an observation":   {sdk.ToolBefore, false, p[sdk.ToolBefore]},
		"a point the host does not fire":  {sdk.HookPoint{Site: sdk.SiteTool, Point: sdk.PointEnd}, false, p[sdk.TurnEnd]},
	} {
		line := hookLine(t, c.at, c.decide, c.payload)
		if err := validate(s.root, line); err == nil {
			t.Errorf("%s: validates: %s", name, line)
		}
	}
}
