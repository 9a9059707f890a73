package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// tool is a test tool whose behaviour is a function.
type tool struct {
	name string
	call func(ctx context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error)
}

func (t tool) Spec() sdk.ToolSpec {
	return sdk.ToolSpec{Name: t.name, Description: "test tool " + t.name, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (tool) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }
func (t tool) Call(ctx context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
	return t.call(ctx, c, ui)
}

func text(s string) sdk.ToolOutput { return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(s)}} }

type command struct{}

func (command) Spec() sdk.CommandSpec {
	return sdk.CommandSpec{Name: "greet", Hint: "say hello", Args: sdk.CommandArgs{Kind: sdk.ArgsFree}}
}
func (command) Run(_ context.Context, r sdk.CommandRun) (sdk.CommandOutcome, error) {
	return sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: "hello " + r.Args + " in " + r.Cwd}, nil
}
func (command) Complete(_ context.Context, r sdk.CompleteRequest) ([]sdk.Completion, error) {
	var out []sdk.Completion
	for _, v := range []string{"alpha", "beta", "gamma"} {
		if strings.HasPrefix(v, r.Partial) {
			out = append(out, sdk.Completion{Value: v})
		}
	}
	return out, nil
}

type contributor struct{}

func (contributor) ID() string { return "ctx" }
func (contributor) Contribute(_ context.Context, q sdk.Query) ([]sdk.Piece, error) {
	if q.Prompt == "" {
		return nil, nil
	}
	return []sdk.Piece{{Title: "t", Text: "prompt was: " + q.Prompt}}, nil
}

type compactor struct{}

func (compactor) ID() string { return "keep-last" }
func (compactor) Compact(_ context.Context, r sdk.CompactRequest) (sdk.Compaction, error) {
	if r.Reason == "fail" {
		return sdk.Compaction{}, errors.New("cannot compact")
	}
	return sdk.Compaction{Messages: r.Context[len(r.Context)-1:], Summary: "kept 1 for " + r.Reason}, nil
}

// provider emits "a", "b", "c" as text; when asked for model "wait" it
// emits "a" and waits for its ctx.
type provider struct{}

func (provider) ID() string { return "scripted" }
func (provider) Stream(ctx context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	if r.Model == "wait" {
		emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "a"})
		<-ctx.Done()
		return sdk.StreamEnd{}, ctx.Err()
	}
	for _, s := range []string{"a", "b", "c"} {
		emit(sdk.StreamEvent{Kind: sdk.EventText, Text: s})
	}
	return sdk.StreamEnd{StopReason: "end"}, nil
}

// hook denies payloads containing "no" and hands every observation to
// observed, in the order Observe is called.
type hook struct{ observed chan string }

func (hook) ID() string { return "guard" }
func (hook) Decide(_ context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
	if strings.Contains(string(ev.Payload), "no") {
		return sdk.HookDecision{Outcome: sdk.HookDeny, Reason: "said no at " + ev.Site + "/" + ev.Point}, nil
	}
	return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
}
func (h hook) Observe(_ context.Context, ev sdk.HookEvent) {
	h.observed <- ev.Site + "/" + ev.Point + " " + string(ev.Payload)
}

type service struct{}

func (service) Key() string { return "test.echo" }
func (service) Call(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != "echo" {
		return nil, errors.New("unknown method " + method)
	}
	return params, nil
}
