package sdk

import (
	"context"
	"encoding/json"
	"strings"
)

// ProviderRequest is one model request.
type ProviderRequest struct {
	Model    string     `json:"model,omitempty"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// MaxTokens, when above 0, is the most tokens the answer may take (an
	// MCP server's sampling request sets it); 0 leaves the bound to the
	// provider.
	MaxTokens int `json:"maxTokens,omitempty"`
}

// EventKind tags a StreamEvent.
type EventKind string

const (
	EventText     EventKind = "text"     // Text is more of the answer
	EventToolCall EventKind = "toolCall" // ToolCall is (a piece of) a tool call
)

// StreamEvent is one chunk of a streamed model response.
type StreamEvent struct {
	Kind EventKind `json:"kind" jsonschema:"enum=text,enum=toolCall"`
	Text string    `json:"text,omitempty"`
	// ToolCall is a delta: chunks with the same Index build one call; ID
	// and Name arrive once, ArgumentsDelta pieces are concatenated.
	ToolCall *ToolCallDelta `json:"toolCall,omitempty"`
}

// ToolCallDelta is a piece of a streamed tool call.
type ToolCallDelta struct {
	Index          int    `json:"index"`
	ID             string `json:"id,omitempty"`
	Name           string `json:"name,omitempty"`
	ArgumentsDelta string `json:"argumentsDelta,omitempty"`
}

// StreamEnd is how a streamed response ended.
type StreamEnd struct {
	StopReason string `json:"stopReason,omitempty"`
	// Model is the model that answered, as the provider names it (an
	// API's own id for it, say); empty when the provider does not say.
	Model string `json:"model,omitempty"`
}

// Provider is a model.
type Provider interface {
	ID() string
	// Stream runs one model request, calling emit for each chunk in order,
	// and returns once the response is complete. Cancelling ctx stops it.
	Stream(ctx context.Context, req ProviderRequest, emit func(StreamEvent)) (StreamEnd, error)
}

// MaxToolCalls bounds the tool calls one response may make; a delta whose
// index is negative or past it is dropped by Assemble.
const MaxToolCalls = 1024

// Assemble folds stream events into the assistant message they spell.
// Arguments of a call that are not valid JSON are kept as a JSON string, so
// the call stays in the conversation and the host, refusing input that is
// not an object, can tell the model what it sent. A call's ID is the
// model's, kept for the tool result that answers it: it may be missing or
// repeated, so the host names the call it runs itself.
// It takes time and memory in proportion to the events: a response may be
// many MiB of small deltas.
func Assemble(events []StreamEvent) Message {
	msg := Message{Role: RoleAssistant}
	var content strings.Builder
	type acc struct {
		id, name string
		args     []byte
	}
	var calls []*acc
	for _, e := range events {
		switch e.Kind {
		case EventText:
			content.WriteString(e.Text)
		case EventToolCall:
			if e.ToolCall == nil {
				continue
			}
			d := e.ToolCall
			if d.Index < 0 || d.Index >= MaxToolCalls {
				continue // a provider's index is not believed: it sizes a slice
			}
			for len(calls) <= d.Index {
				calls = append(calls, &acc{})
			}
			c := calls[d.Index]
			if d.ID != "" {
				c.id = d.ID
			}
			if d.Name != "" {
				c.name = d.Name
			}
			c.args = append(c.args, d.ArgumentsDelta...)
		}
	}
	msg.Content = content.String()
	for _, c := range calls {
		if c.name == "" {
			continue
		}
		input := json.RawMessage(c.args)
		if len(input) == 0 {
			input = json.RawMessage("{}")
		} else if !json.Valid(input) {
			input, _ = json.Marshal(string(c.args))
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCallRequest{ID: c.id, Name: c.name, Input: input})
	}
	return msg
}
