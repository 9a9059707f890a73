package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	// Tools is left out when empty: some servers refuse "tools": [].
	Tools  []chatTool `json:"tools,omitempty"`
	Stream bool       `json:"stream"`
	// The bound on the answer, when the request sets one: one of the two,
	// as the server wants it (Provider.official).
	MaxTokens           int `json:"max_tokens,omitempty"`
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a pointer so an assistant message that only calls tools
	// can leave it out, as the API documents, while every other message
	// sends it even when empty.
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name string `json:"name"`
	// Arguments is JSON text inside a JSON string, as the API wants it.
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is sent for a tool with no input schema: the API requires an
// object schema, and "no arguments" is an object with no properties.
var emptySchema = json.RawMessage(`{"type":"object"}`)

// requestBody maps req onto the Chat Completions request.
func (p *Provider) requestBody(req sdk.ProviderRequest) ([]byte, error) {
	body := chatRequest{Model: p.model, Stream: true}
	if req.Model != "" {
		body.Model = req.Model
	}
	if req.MaxTokens > 0 {
		if p.official {
			body.MaxCompletionTokens = req.MaxTokens
		} else {
			body.MaxTokens = req.MaxTokens
		}
	}
	if req.System != "" {
		body.Messages = append(body.Messages, textMessage("system", req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case sdk.RoleSystem, sdk.RoleUser:
			body.Messages = append(body.Messages, textMessage(string(m.Role), m.Content))
		case sdk.RoleAssistant:
			cm := chatMessage{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				c := m.Content
				cm.Content = &c
			}
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{
					ID:       tc.ID,
					Type:     "function",
					Function: chatFunction{Name: tc.Name, Arguments: arguments(tc.Input)},
				})
			}
			body.Messages = append(body.Messages, cm)
		case sdk.RoleTool:
			cm := textMessage("tool", m.Content)
			cm.ToolCallID = m.ToolCallID
			body.Messages = append(body.Messages, cm)
		default:
			return nil, fmt.Errorf("openai provider %q: message %d has role %q; the roles are system, user, assistant and tool", p.id, i, m.Role)
		}
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = emptySchema
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("openai provider %q: tool %q has an input schema that is not valid JSON; fix the tool's spec", p.id, t.Name)
		}
		body.Tools = append(body.Tools, chatTool{
			Type:     "function",
			Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai provider %q: encoding the request: %v", p.id, err)
	}
	return data, nil
}

func textMessage(role, content string) chatMessage {
	return chatMessage{Role: role, Content: &content}
}

// arguments is the text the model wrote for a call's input. sdk.Assemble
// keeps arguments that were not valid JSON as a JSON string; sending that
// string's contents gives the model back exactly what it wrote, rather than
// a quoted copy it never produced.
func arguments(input json.RawMessage) string {
	in := bytes.TrimSpace(input)
	if len(in) == 0 {
		return "{}"
	}
	if in[0] == '"' {
		var s string
		if json.Unmarshal(in, &s) == nil {
			return s
		}
	}
	return string(in)
}
