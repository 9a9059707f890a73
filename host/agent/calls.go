package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// UI is what the host needs from the person's side of the run. The CLI
// implements it for a terminal and for --print. Methods may be called
// concurrently.
type UI interface {
	// Progress shows a running tool call's live output line.
	Progress(tool, tail string)
	// Ask puts a running tool's question to the person.
	Ask(ctx context.Context, tool, question string) (string, error)
	// Approve asks the person whether a tool call may run. It returns
	// ErrNoOneToAsk when nobody can answer (--print, no terminal).
	Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error)
}

// CallWatcher is a UI that shows how long a tool call runs, so that a
// tool working in silence is not taken for a hung one: CallTool calls
// Started as the tool is called and the function it returns once the
// call has ended.
type CallWatcher interface {
	Started(tool string) (ended func())
}

// ErrNoOneToAsk is what a UI answers when there is no person to ask.
var ErrNoOneToAsk = errors.New("there is no one to ask")

// DeniedError is the error of a tool call the gate or a hook refused.
type DeniedError struct {
	Tool   string
	Reason string
}

func (e *DeniedError) Error() string { return e.Tool + " denied: " + e.Reason }

// BlockedError is the error of a tool call a hook blocked: the turn stops.
type BlockedError struct {
	Tool, Hook, Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s blocked by hook %s: %s", e.Tool, e.Hook, e.Reason)
}

// CallTool runs one tool call exactly as a model's call runs: hooks at
// tool/before, then the gate, then the tool, then hooks observe tool/after.
// A refused call returns a *DeniedError or *BlockedError; a tool that could
// not answer, or input that is not a JSON object, returns its error, with
// an error output the model can read.
//
// req.ID, the model's name for the call, is not used: a model's id may be
// missing or repeated, and the call's progress, questions and cancellation
// are routed by its id. The host names every call itself, uniquely in the
// session; the caller keeps the model's id for the tool result it sends
// back.
func (a *Agent) CallTool(ctx context.Context, req sdk.ToolCallRequest, turn int, ui UI) (sdk.ToolOutput, error) {
	tool, ok := a.cfg.Registry.Tool(req.Name)
	if !ok {
		err := fmt.Errorf("unknown tool %q", req.Name)
		return errorOutput(err), err
	}
	input, err := objectInput(req.Input)
	if err != nil {
		err = fmt.Errorf("%s: %w", req.Name, err)
		return errorOutput(err), err
	}
	call := sdk.ToolCall{ID: "call-" + strconv.FormatUint(a.calls.Add(1), 10), Name: req.Name, Input: input,
		Cwd: a.cfg.Cwd, Session: a.cfg.Session, Turn: turn}

	// Hooks can only tighten: their verdict is combined with the gate's,
	// never in place of it.
	d, hook := a.cfg.Plugins.Decide(ctx, sdk.ToolBefore, call)
	switch d.Outcome {
	case sdk.HookBlock:
		return sdk.ToolOutput{}, &BlockedError{Tool: call.Name, Hook: hook, Reason: d.Reason}
	case sdk.HookDeny:
		return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: fmt.Sprintf("hook %s: %s", hook, d.Reason)}
	case sdk.HookRedirect:
		call.Input = d.Value
	}

	decision, rule := a.cfg.Gate.Decide(call.Name)
	switch {
	case decision == gate.Deny:
		return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: "denied by " + rule}
	case decision == gate.Ask || d.Outcome == sdk.HookAsk:
		why := "no rule allows it"
		if d.Outcome == sdk.HookAsk {
			why = fmt.Sprintf("hook %s asks: %s", hook, d.Reason)
		} else if rule != "" {
			why = "asked by " + rule
		}
		if claims := tool.Spec().Claims; claims != "" {
			why += "; it claims, unverified: " + claims
		}
		ok, err := ui.Approve(ctx, call, why)
		switch {
		case errors.Is(err, ErrNoOneToAsk) && d.Outcome == sdk.HookAsk:
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: hookUnanswered(hook, d)}
		case errors.Is(err, ErrNoOneToAsk):
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: why + " and " + err.Error() + "; " + a.cfg.Gate.HowToAllow(call.Name) + a.cfg.NotInForce}
		}
		if err != nil {
			return sdk.ToolOutput{}, err
		}
		if !ok {
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: "the person said no"}
		}
	}

	ended := func() {}
	if w, ok := ui.(CallWatcher); ok {
		ended = w.Started(call.Name)
	}
	out, err := tool.Call(ctx, call, callUI{ui: ui, tool: call.Name})
	ended()
	if err != nil {
		out = errorOutput(err)
	}
	a.cfg.Plugins.Observe(sdk.ToolAfter, sdk.ToolAfterPayload{Call: call, Output: out})
	return out, err
}

// hookUnanswered says that a hook's question found no one to answer it.
// It advises no allow rule: a hook asks whatever the rules allow, so only
// a person can answer it.
func hookUnanswered(hook string, d sdk.HookDecision) string {
	return fmt.Sprintf("hook %s asks: %s; no one can answer it here (--print, or no terminal): run bingo on a terminal to answer it", hook, d.Reason)
}

// objectInput is a call's input as a tool is given it: a JSON object, as
// every tool's input schema says. No input, or null, is the empty object;
// anything else is refused before a hook, the gate or the tool sees it,
// with what it was, so the model can correct itself.
func objectInput(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && !json.Valid(t) {
		return nil, fmt.Errorf("the input is not JSON; want a JSON object: %s", render.Brief(string(t), 79))
	}
	input, kind, ok := protocol.ToolInput(raw)
	if !ok {
		return nil, fmt.Errorf("the input must be a JSON object, not %s: %s", kind, render.Brief(string(t), 79))
	}
	return input, nil
}

func errorOutput(err error) sdk.ToolOutput {
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(err.Error())}, IsError: true}
}

// callUI is the sdk.CallUI of one call.
type callUI struct {
	ui   UI
	tool string
}

func (c callUI) Progress(tail string) { c.ui.Progress(c.tool, tail) }
func (c callUI) Ask(ctx context.Context, q string) (string, error) {
	return c.ui.Ask(ctx, c.tool, q)
}
