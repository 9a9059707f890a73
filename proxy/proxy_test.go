package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// answering is a Caller whose plugin answers every request with the same
// raw result, decoded the way the bridge's JSON-RPC connection decodes it.
type answering string

func (a answering) Call(_ context.Context, _ Request, result any) error {
	return json.Unmarshal([]byte(a), result)
}

func (answering) Notify(context.Context, string, any) error { return nil }

// Every answer type: its envelope missing is an error, not an empty
// answer, and a value of the wrong type says where in the wire's words.
func TestAnswersAreCheckedInTheWiresWords(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(c Caller) error{
		"tool/call": func(c Caller) error {
			_, err := NewTool(c, "p", sdk.ToolSpec{Name: "t"}).Call(ctx, sdk.ToolCall{ID: "c"}, nil)
			return err
		},
		"command/run": func(c Caller) error {
			_, err := NewCommand(c, sdk.CommandSpec{Name: "c"}).Run(ctx, sdk.CommandRun{})
			return err
		},
		"command/complete": func(c Caller) error {
			_, err := NewCommand(c, sdk.CommandSpec{Name: "c"}).Complete(ctx, sdk.CompleteRequest{})
			return err
		},
		"context/contribute": func(c Caller) error {
			_, err := NewContributor(c, "x").Contribute(ctx, sdk.Query{})
			return err
		},
		"compactor/compact": func(c Caller) error {
			_, err := NewCompactor(c, "x").Compact(ctx, sdk.CompactRequest{})
			return err
		},
		"provider/stream": func(c Caller) error {
			_, err := NewProvider(c, "x", func() string { return "s" }).Stream(ctx, sdk.ProviderRequest{}, func(sdk.StreamEvent) {})
			return err
		},
		"hook/decide": func(c Caller) error {
			_, err := NewHook(c, "x").Decide(ctx, sdk.HookEvent{})
			return err
		},
		"service/call": func(c Caller) error {
			_, err := NewService(c, "x").Call(ctx, "m", nil)
			return err
		},
	}
	for _, tc := range []struct{ method, answer, want string }{
		{"tool/call", `{"output":{"parts":[{"type":"text","text":"hi"}]}}`, ""},
		{"tool/call", `{"parts":[{"type":"text","text":"hi"}]}`, "bad answer: output: required, but missing"},
		{"tool/call", `{"output":{"parts":[],"display":{"kind":"table","rows":[1]}}}`, "bad answer: output.display.rows[0]: want an array of strings, got 1"},
		{"command/run", `{"outcome":{"kind":"text","text":"hi"}}`, ""},
		{"command/run", `{"kind":"text","text":"hi"}`, "bad answer: outcome: required, but missing"},
		{"command/run", `{"outcome":{"kind":"view"}}`, `bad answer: outcome: kind "view" needs a "view"`},
		{"command/run", `{"outcome":{"kind":"view","view":{"kind":"table","rows":[[7]]}}}`, "bad answer: outcome.view.rows[0][0]: want a string, got 7"},
		{"command/complete", `{"completions":[{"value":"a"}]}`, ""},
		{"command/complete", `[{"value":"a"}]`, "bad answer: want an object, got an array"},
		{"command/complete", `{"completions":[{"value":1}]}`, "bad answer: completions[0].value: want a string, got 1"},
		{"context/contribute", `{"pieces":[]}`, ""},
		{"context/contribute", `{"text":"x"}`, "bad answer: pieces: required, but missing"},
		{"compactor/compact", `{"compaction":{"messages":[]}}`, ""},
		{"compactor/compact", `{"messages":[]}`, "bad answer: compaction: required, but missing"},
		{"compactor/compact", `{"compaction":{"messages":{}}}`, "bad answer: compaction.messages: want an array of objects, got an object"},
		{"provider/stream", `{"end":{}}`, ""},
		{"provider/stream", `{"stopReason":"end_turn"}`, "bad answer: end: required, but missing"},
		{"hook/decide", `{"outcome":"continue"}`, ""},
		{"hook/decide", `{"decision":"deny"}`, "bad answer: outcome: required, but missing"},
		{"service/call", `{"result":null}`, ""},
		{"service/call", `{"answer":1}`, "bad answer: result: required, but missing"},
		{"service/call", `null`, "bad answer: want an object, got null"},
	} {
		got := fmt.Sprint(calls[tc.method](answering(tc.answer)))
		if tc.want == "" && got != "<nil>" || tc.want != "" && got != tc.want {
			t.Errorf("%s answering %s:\n got %s\nwant %s", tc.method, tc.answer, got, tc.want)
		}
	}
}

// A plugin's unknown outcome is quoted cut short: a hook answering a 5000
// character outcome gets a one-line error, not the outcome echoed back.
func TestUnknownOutcomeIsQuotedShort(t *testing.T) {
	long := strings.Repeat("x", 5000)
	_, err := NewHook(answering(`{"outcome":"`+long+`"}`), "h").Decide(context.Background(), sdk.HookEvent{})
	if err == nil {
		t.Fatal("an unknown outcome was taken")
	}
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, `unknown outcome "xxxx`) {
		t.Errorf("error is %d bytes, want a short one naming the outcome: %.120s", len(msg), msg)
	}
}
