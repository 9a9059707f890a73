package mcpbridge

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An elicitation with no tool call running has no one to ask.
func TestElicitNoCall(t *testing.T) {
	s := &server{}
	_, err := s.elicit(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "name?"}})
	if err == nil || !strings.Contains(err.Error(), "none is running") {
		t.Errorf("elicit with no call: %v, want a refusal", err)
	}
}

// The answer's shape follows the requested schema.
func TestElicitContent(t *testing.T) {
	for _, tc := range []struct {
		fields []field
		answer string
		want   map[string]any
		err    bool
	}{
		{fields: nil, answer: "ok", want: nil},
		{fields: []field{{name: "n", typ: "integer"}}, answer: "42", want: map[string]any{"n": int64(42)}},
		{fields: []field{{name: "n", typ: "integer"}}, answer: "x", err: true},
		{fields: []field{{name: "b", typ: "boolean"}}, answer: "yes", want: map[string]any{"b": true}},
		{fields: []field{{name: "f", typ: "number"}}, answer: "1.5", want: map[string]any{"f": 1.5}},
		{fields: []field{{name: "a"}, {name: "b"}}, answer: `{"a":1,"b":"x"}`, want: map[string]any{"a": float64(1), "b": "x"}},
		{fields: []field{{name: "a"}, {name: "b"}}, answer: "a b", err: true},
	} {
		got, err := elicitContent(tc.fields, tc.answer)
		if (err != nil) != tc.err || (!tc.err && !equalMaps(got, tc.want)) {
			t.Errorf("%v %q = %v, %v; want %v (error %v)", tc.fields, tc.answer, got, err, tc.want, tc.err)
		}
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A server's long error line is cut for its notice on a character: a cut
// inside one made the notice invalid UTF-8.
func TestFirstLineCutsOnACharacter(t *testing.T) {
	got := firstLine(strings.Repeat("€", 300) + "\nsecond")
	if !utf8.ValidString(got) || got != strings.Repeat("€", 200)+"…" {
		t.Errorf("firstLine = %q, want 200 € and an ellipsis", got)
	}
}
