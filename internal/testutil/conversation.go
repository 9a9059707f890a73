package testutil

import (
	"encoding/json"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// TwoTurns returns a conversation of two turns, the second still running:
// its prompt (index 6), a tool call and the call's result. Each call
// returns a fresh copy, so a test may change it.
func TwoTurns() []sdk.Message {
	return []sdk.Message{
		{Role: sdk.RoleUser, Content: "first"},
		{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{{ID: "c1", Name: "t", Input: json.RawMessage(`{"a": 1}`)}}},
		{Role: sdk.RoleTool, ToolCallID: "c1", Content: "r1"},
		{Role: sdk.RoleAssistant, Content: "a1"},
		{Role: sdk.RoleUser, Content: "second"},
		{Role: sdk.RoleAssistant, Content: "a2"},
		{Role: sdk.RoleUser, Content: "latest"},
		{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{{ID: "c2", Name: "t", Input: json.RawMessage(`{}`)}}},
		{Role: sdk.RoleTool, ToolCallID: "c2", Content: "r2"},
	}
}
