package sdk

import (
	"context"
	"encoding/json"
)

// ToolSpec describes a tool to the model: its name, what it does and the
// JSON Schema of its input. A name holds letters, digits, '_' and '-', and
// at most 64 of them, which is what model APIs accept.
type ToolSpec struct {
	Name        string          `json:"name" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9_-]+$"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty" jsonschema:"type=object"`
	// Traits is what the tool claims about itself. An in-process tool's
	// claim is believed; a bridge tool's never is (see ToolTraits).
	Traits *ToolTraits `json:"traits,omitempty"`
	// Claims is what the tool's author says of it in words ("read-only,
	// not destructive"; an MCP server's annotations): never believed, and
	// shown to the person beside the question whether to run a call.
	Claims string `json:"claims,omitempty"`
}

// Interrupt says what happens to a running tool when the turn is
// interrupted. The zero value is InterruptBlock.
type Interrupt string

const (
	// InterruptBlock: the host waits for the tool's answer (after asking it
	// to stop). It is the default because it never loses an answer.
	InterruptBlock Interrupt = ""
	// InterruptCancel: the host abandons the call at once.
	InterruptCancel Interrupt = "cancel"
)

// ToolTraits is what the host believes about a tool when it schedules and
// gates it. The zero value is the untrusted default: not trusted, not
// read-only, not concurrency-safe, interrupt Block. Bridge tools always wear
// the zero value, whatever the plugin claims.
type ToolTraits struct {
	Trusted         bool      `json:"trusted,omitempty"`
	ReadOnly        bool      `json:"readOnly,omitempty"`
	ConcurrencySafe bool      `json:"concurrencySafe,omitempty"`
	Interrupt       Interrupt `json:"interrupt,omitempty" jsonschema:"enum=,enum=cancel"`
}

// Part is one piece of a tool's output for the model. Only text parts exist
// today.
type Part struct {
	Type string `json:"type" jsonschema:"enum=text"`
	Text string `json:"text"`
}

// TextPart is a Part holding text.
func TextPart(s string) Part { return Part{Type: "text", Text: s} }

// ToolOutput is a tool's answer: parts for the model and, optionally, a View
// for the person.
type ToolOutput struct {
	Parts   []Part `json:"parts"`
	Display *View  `json:"display,omitempty"`
	IsError bool   `json:"isError,omitempty"`
}

// Text joins the output's text parts, which is what a model or a folded
// rendering reads.
func (o ToolOutput) Text() string {
	var s string
	for i, p := range o.Parts {
		if i > 0 {
			s += "\n"
		}
		s += p.Text
	}
	return s
}

// ToolCall is one invocation of a tool.
type ToolCall struct {
	// ID names this call; progress and questions are addressed by it.
	ID      string          `json:"callId"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Cwd     string          `json:"cwd"`
	Session string          `json:"session"`
	Turn    int             `json:"turn"`
}

// CallUI is what a running tool may do towards the person. Implementations
// must be safe for concurrent use.
type CallUI interface {
	// Progress replaces the call's live output line.
	Progress(tail string)
	// Ask puts a question to the person and returns the answer.
	Ask(ctx context.Context, question string) (string, error)
}

// Tool is a capability the model can call.
type Tool interface {
	Spec() ToolSpec
	// Traits is what the host believes about the tool.
	Traits() ToolTraits
	// Call runs the tool. A tool reports its own failure as an output with
	// IsError; an error return means the tool could not be reached or run.
	Call(ctx context.Context, call ToolCall, ui CallUI) (ToolOutput, error)
}
