package sdk

import (
	"encoding/json"
	"testing"
)

func TestAssemble(t *testing.T) {
	call := func(i int, id, name, args string) StreamEvent {
		return StreamEvent{Kind: EventToolCall, ToolCall: &ToolCallDelta{Index: i, ID: id, Name: name, ArgumentsDelta: args}}
	}
	msg := Assemble([]StreamEvent{
		{Kind: EventText, Text: "let me "},
		call(0, "a", "count", `{"pa`),
		{Kind: EventText, Text: "see"},
		call(1, "b", "other", `not json`),
		call(0, "", "", `th":"x"}`),
		call(2, "c", "", `{}`), // no name: not a call
	})
	if msg.Role != RoleAssistant || msg.Content != "let me see" || len(msg.ToolCalls) != 2 {
		t.Fatalf("%+v", msg)
	}
	if c := msg.ToolCalls[0]; c.ID != "a" || c.Name != "count" || string(c.Input) != `{"path":"x"}` {
		t.Fatalf("call 0 = %+v", c)
	}
	var kept string
	if json.Unmarshal(msg.ToolCalls[1].Input, &kept) != nil || kept != "not json" {
		t.Fatalf("invalid arguments must be kept as a JSON string: %s", msg.ToolCalls[1].Input)
	}
}

// A provider's index is not believed: a negative one must not panic the
// host, a huge one must not make it allocate.
func TestAssembleRefusesWildIndexes(t *testing.T) {
	msg := Assemble([]StreamEvent{
		{Kind: EventToolCall, ToolCall: &ToolCallDelta{Index: -1, ID: "x", Name: "t"}},
		{Kind: EventToolCall, ToolCall: &ToolCallDelta{Index: 2_000_000_000, ID: "y", Name: "t"}},
		{Kind: EventToolCall, ToolCall: &ToolCallDelta{Index: 0, ID: "z", Name: "t"}},
	})
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "z" {
		t.Fatalf("%+v", msg.ToolCalls)
	}
}

// A long response of small deltas is assembled in linear time and memory:
// joining the text by concatenation copied it once per delta.
func TestAssembleIsLinear(t *testing.T) {
	events := make([]StreamEvent, 20_000)
	for i := range events {
		events[i] = StreamEvent{Kind: EventText, Text: "0123456789"}
	}
	var msg Message
	if allocated := testing.AllocsPerRun(1, func() { msg = Assemble(events) }); len(msg.Content) != 200_000 || allocated > 100 {
		t.Fatalf("%d bytes in %v allocations", len(msg.Content), allocated)
	}
}
