package sdk

import (
	"context"
	"encoding/json"
)

// HookOutcome is what a hook decides. There is deliberately no Allow: a hook
// can only tighten what happens, never widen it, which is why hooks may
// cross the process boundary while policies may not.
type HookOutcome string

const (
	HookContinue HookOutcome = "continue" // carry on as if the hook were not there
	HookDeny     HookOutcome = "deny"     // refuse this one action; the turn goes on
	HookAsk      HookOutcome = "ask"      // put the action to the person even if a rule allows it
	HookBlock    HookOutcome = "block"    // stop the turn
	HookRedirect HookOutcome = "redirect" // go on with Value instead (see HookDecision.Value); the same gate applies
)

// Hook sites and points the host offers.
const (
	SiteTool   = "tool"   // payload: the ToolCall before; a ToolAfterPayload after
	SitePrompt = "prompt" // payload: the ProviderRequest about to go to the model
	SiteTurn   = "turn"   // observe only; payload: a TurnEndPayload at its end

	PointBefore = "before"
	PointAfter  = "after"
	PointEnd    = "end"
)

// HookPoint is a place in the host's work where hooks are asked to decide
// or told what happened. A declaration names it "site/point" (String).
type HookPoint struct{ Site, Point string }

func (p HookPoint) String() string { return p.Site + "/" + p.Point }

// The points the host offers, and the only ones it fires.
var (
	ToolBefore   = HookPoint{SiteTool, PointBefore}   // decide whether a tool call runs
	PromptBefore = HookPoint{SitePrompt, PointBefore} // decide whether a model request is sent
	ToolAfter    = HookPoint{SiteTool, PointAfter}    // observe a tool call's output
	TurnEnd      = HookPoint{SiteTurn, PointEnd}      // observe a turn's end
)

// DecisionPoints returns the points where hooks decide. A hook declaring
// any other would wait for one that never comes, so such a declaration is
// refused. Each call returns a new slice: the host checks declarations
// against it, so it is a function rather than a variable an importer could
// change under the host.
func DecisionPoints() []HookPoint { return []HookPoint{ToolBefore, PromptBefore} }

// ObservationPoints returns the points where hooks observe, a new slice
// each call, as DecisionPoints does.
func ObservationPoints() []HookPoint { return []HookPoint{ToolAfter, TurnEnd} }

// ToolAfterPayload is the payload at tool/after: the call as it ran (its
// input redirected, if a hook redirected it) and what it returned.
type ToolAfterPayload struct {
	Call   ToolCall   `json:"call"`
	Output ToolOutput `json:"output"`
}

// TurnEndPayload is the payload at turn/end.
type TurnEndPayload struct {
	// Turn counts the session's turns, from 1.
	Turn int `json:"turn"`
	// Steps is how many model responses the turn took.
	Steps int `json:"steps"`
	// Text is what the model's last response said ("" if it said nothing).
	Text string `json:"text"`
}

// HookPayloads maps every point the host fires to a zero value of the type
// of its payload: tool/before a ToolCall, prompt/before the ProviderRequest
// about to be sent, tool/after a ToolAfterPayload, turn/end a
// TurnEndPayload. The host builds its payloads from these types, and the
// schema (schema/plugin.json) states them per point from this table.
func HookPayloads() map[HookPoint]any {
	return map[HookPoint]any{
		ToolBefore:   ToolCall{},
		PromptBefore: ProviderRequest{},
		ToolAfter:    ToolAfterPayload{},
		TurnEnd:      TurnEndPayload{},
	}
}

// HookEvent is what a hook is shown.
type HookEvent struct {
	Site    string          `json:"site"`
	Point   string          `json:"point"`
	Payload json.RawMessage `json:"payload"`
}

// HookDecision is a hook's answer.
type HookDecision struct {
	Outcome HookOutcome `json:"outcome" jsonschema:"enum=continue,enum=deny,enum=ask,enum=block,enum=redirect"`
	// Value is what a redirect goes on with. At tool/before it replaces
	// the call's input (the tool, the call's id and the rest stay the
	// host's); at prompt/before it replaces the whole model request.
	Value  json.RawMessage `json:"value,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// Hook decides at decision points and observes at observation points.
type Hook interface {
	ID() string
	// Decide returns the hook's decision. On error (a remote hook past its
	// deadline, a dead process) the hook decides nothing: the caller treats
	// it as Continue.
	Decide(ctx context.Context, ev HookEvent) (HookDecision, error)
	// Observe tells the hook what happened; nothing waits on it.
	Observe(ctx context.Context, ev HookEvent)
}
