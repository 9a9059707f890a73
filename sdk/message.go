package sdk

import "encoding/json"

// Role is who said a Message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation a provider reads.
type Message struct {
	Role    Role   `json:"role" jsonschema:"enum=system,enum=user,enum=assistant,enum=tool"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCallRequest `json:"toolCalls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ToolCallRequest is a model's request to call a tool.
type ToolCallRequest struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}
