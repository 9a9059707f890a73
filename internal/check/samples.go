package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ui is a tool call's CallUI with no one behind it.
type ui struct{}

func (ui) Progress(string) {}
func (ui) Ask(context.Context, string) (string, error) {
	return "", errors.New("no one to ask while checking")
}

func sampleConversation() []sdk.Message {
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "line %d: the quick brown fox jumps over the lazy dog\n", i+1)
	}
	return []sdk.Message{
		{Role: sdk.RoleUser, Content: "How many words are in notes.txt?"},
		{Role: sdk.RoleAssistant, Content: "notes.txt has 9 words."},
		{Role: sdk.RoleUser, Content: "And show me its lines."},
		{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{{ID: "check-1", Name: "plugin__files__read", Input: json.RawMessage(`{"path":"notes.txt"}`)}}},
		{Role: sdk.RoleTool, ToolCallID: "check-1", Content: lines.String()},
	}
}

// samplePayload is a payload of the shape the host sends at point.
func samplePayload(point, cwd string) json.RawMessage {
	call := sdk.ToolCall{ID: "check-hook", Name: "plugin__other__tool", Input: json.RawMessage(`{"path":"notes.txt"}`), Cwd: cwd, Session: "check", Turn: 1}
	var v any
	switch point {
	case sdk.ToolBefore.String():
		v = call
	case sdk.PromptBefore.String():
		v = sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "How many words are in notes.txt?"}}}
	case sdk.ToolAfter.String():
		v = map[string]any{"call": call, "output": sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("notes.txt: 9 words")}}}
	case sdk.TurnEnd.String():
		v = map[string]any{"turn": 1, "steps": 1, "text": "notes.txt has 9 words."}
	default:
		v = map[string]any{}
	}
	raw, _ := json.Marshal(v)
	return raw
}

// sampleBudget bounds a sample, counted as the bytes of its strings and
// one for each value: the sizes it is built to (minLength, minItems,
// nested) are the plugin's to name, and it is built in memory before it
// is sent.
const sampleBudget = 64 << 10

// sample is a value the JSON Schema s accepts, as far as its common
// keywords say: a const, an enum's first value, a default, or by type
// (an object holds its required properties). ok is false if the schema
// asks for more than sampleBudget.
func sample(s json.RawMessage) (v any, ok bool) {
	left := sampleBudget
	v = sampleOf(s, 0, &left)
	return v, left >= 0
}

// sampleOf builds sample's value, taking what it builds from *left; once
// that is below zero, what it returns is cut short and not to be sent.
func sampleOf(s json.RawMessage, depth int, left *int) any {
	if *left--; *left < 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(s)) == 0 {
		return map[string]any{}
	}
	if json.Unmarshal(s, &m) != nil || depth > 8 {
		return map[string]any{}
	}
	pick := func(key string) (any, bool) {
		raw, ok := m[key]
		if !ok {
			return nil, false
		}
		var v any
		return v, json.Unmarshal(raw, &v) == nil
	}
	if raw, ok := m["const"]; ok {
		var v any
		json.Unmarshal(raw, &v)
		return v
	}
	if raw, ok := m["enum"]; ok {
		var vs []any
		if json.Unmarshal(raw, &vs) == nil && len(vs) > 0 {
			return vs[0]
		}
	}
	if raw, ok := m["default"]; ok {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var alts []json.RawMessage
		if raw, ok := m[key]; ok && json.Unmarshal(raw, &alts) == nil && len(alts) > 0 {
			return sampleOf(alts[0], depth+1, left)
		}
	}
	typ := ""
	if t, ok := pick("type"); ok {
		switch t := t.(type) {
		case string:
			typ = t
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					typ = s
					break
				}
			}
		}
	}
	if typ == "" {
		typ = "object"
	}
	num := func(key string) (float64, bool) {
		v, ok := pick(key)
		f, isNum := v.(float64)
		return f, ok && isNum
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		var props map[string]json.RawMessage
		json.Unmarshal(m["properties"], &props)
		var required []string
		json.Unmarshal(m["required"], &required)
		sort.Strings(required)
		for _, name := range required {
			if obj[name] = sampleOf(props[name], depth+1, left); *left < 0 {
				return nil
			}
		}
		return obj
	case "string":
		s := "sample"
		if n, ok := num("minLength"); ok && n > float64(len(s)) {
			if n > float64(*left) {
				*left = -1
				return nil
			}
			s += strings.Repeat("x", int(n)-len(s))
		}
		if n, ok := num("maxLength"); ok && n >= 0 && n < float64(len(s)) {
			s = s[:int(n)]
		}
		*left -= len(s)
		return s
	case "integer", "number":
		if n, ok := num("minimum"); ok {
			return n
		}
		if n, ok := num("exclusiveMinimum"); ok {
			return n + 1
		}
		if n, ok := num("maximum"); ok && n < 1 {
			return n
		}
		return 1
	case "boolean":
		return false
	case "array":
		if n, ok := num("minItems"); ok && n > 0 {
			if n > float64(*left) {
				*left = -1
				return nil
			}
			items := make([]any, int(n))
			for i := range items {
				if items[i] = sampleOf(m["items"], depth+1, left); *left < 0 {
					return nil
				}
			}
			return items
		}
		return []any{}
	case "null":
		return nil
	}
	return map[string]any{}
}
