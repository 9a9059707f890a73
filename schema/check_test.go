package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The host holds a declaration to "the same rules the schema states"
// (protocol.Check, read from the Go tags the document is generated from):
// on every entry here, Check finds nothing exactly when the schema
// validates. Unknown keys count as problems, as additionalProperties:
// false says.
func TestCheckAgreesWithTheSchema(t *testing.T) {
	s := schemaUnderTest(t)
	long := strings.Repeat("a", 65)
	cases := map[string][]string{
		"ToolSpec": {
			`{"name":"count","description":"d"}`,
			`{"name":"count","description":"d","inputSchema":{"type":"object"},"traits":{"readOnly":true,"interrupt":"cancel"}}`,
			`{"name":"count"}`,
			`{"description":"d"}`,
			`{"name":"","description":"d"}`,
			`{"name":"a b","description":"d"}`,
			`{"name":"` + long + `","description":"d"}`,
			`{"name":"count","description":null}`,
			`{"name":"count","description":"d","inputSchema":[]}`,
			`{"name":"count","description":"d","inputSchema":null}`,
			`{"name":"count","description":"d","traits":{"interrupt":"later"}}`,
			`{"name":"count","description":"d","desc":"x"}`,
			`{"name":1,"description":"d"}`,
			`[]`,
			`null`,
		},
		"CommandSpec": {
			`{"name":"wordcount","args":{"kind":"free","hint":"<path>"},"instant":true,"family":"plugin"}`,
			`{"name":"wordcount"}`,
			`{"name":"x y","args":{"kind":"none"}}`,
			`{"name":"/a/b","args":{"kind":"none"}}`,
			`{"name":"a\nb","args":{"kind":"none"}}`,
			`{"name":"` + long + `","args":{"kind":"none"}}`,
			`{"name":"w","args":{"kind":"some"}}`,
			`{"name":"w","args":{}}`,
			`{"name":"w","args":{"kind":"none"},"instant":"yes"}`,
			`{"name":"w","args":{"kind":"none"},"hint":null}`,
		},
		"ContributorDecl": {`{"id":"c"}`, `{"id":""}`, `{}`, `{"id":"c","description":3}`},
		"ProviderDecl":    {`{"id":"p","models":["m"]}`, `{"id":"p","models":[1]}`, `{"id":"p","models":null}`},
		"ServiceDecl":     {`{"key":"k","methods":["m"]}`, `{"key":""}`, `{"key":"k","methods":"m"}`},
		"View": {
			`{"kind":"text","text":"t","title":"x"}`,
			`{"kind":"table","columns":["a"],"rows":[["1"]]}`,
			`{"kind":"text","columns":["a"]}`,
			`{"kind":"list","items":["a"],"pairs":[]}`,
			`{"kind":"stack","views":[{"kind":"text","rows":[]}]}`,
			`{"kind":"chart"}`,
		},
		"CommandOutcome": {
			`{"kind":"view","view":{"kind":"text","text":"t"}}`,
			`{"kind":"view"}`,
			`{"kind":"text","text":"t","prompt":"p"}`,
			`{"kind":"error","message":"m"}`,
			`{"kind":"none"}`,
		},
		"StreamEvent": {
			`{"kind":"text","text":"t"}`,
			`{"kind":"toolCall"}`,
			`{"kind":"text","toolCall":{"index":0}}`,
		},
		"HookDecl": {
			`{"id":"h","decide":["tool/before"],"observe":["turn/end"]}`,
			`{"id":"h","decide":"tool/before"}`,
			`{"id":""}`,
		},
	}
	checks := map[string]func(json.RawMessage) []protocol.Problem{
		"ToolSpec":        func(r json.RawMessage) []protocol.Problem { return protocol.Check[sdk.ToolSpec](r, "") },
		"CommandSpec":     func(r json.RawMessage) []protocol.Problem { return protocol.Check[sdk.CommandSpec](r, "") },
		"ContributorDecl": func(r json.RawMessage) []protocol.Problem { return protocol.Check[protocol.ContributorDecl](r, "") },
		"ProviderDecl":    func(r json.RawMessage) []protocol.Problem { return protocol.Check[protocol.ProviderDecl](r, "") },
		"ServiceDecl":     func(r json.RawMessage) []protocol.Problem { return protocol.Check[protocol.ServiceDecl](r, "") },
		"HookDecl":        func(r json.RawMessage) []protocol.Problem { return protocol.Check[protocol.HookDecl](r, "") },
		"View":            func(r json.RawMessage) []protocol.Problem { return protocol.Check[sdk.View](r, "") },
		"CommandOutcome":  func(r json.RawMessage) []protocol.Problem { return protocol.Check[sdk.CommandOutcome](r, "") },
		"StreamEvent":     func(r json.RawMessage) []protocol.Problem { return protocol.Check[sdk.StreamEvent](r, "") },
	}
	for def, entries := range cases {
		sch := s.at(t, "#/$defs/"+def)
		for _, e := range entries {
			schemaErr := validate(sch, []byte(e))
			problems := checks[def](json.RawMessage(e))
			if (schemaErr == nil) != (len(problems) == 0) {
				t.Errorf("%s %.70s: the schema says %v, Check says %v", def, e, schemaErr, problems)
			}
		}
	}
}

// A whole line a plugin sends: protocol's envelope and params checks (what
// the bridge and bingo plugins check hold a line to) find nothing exactly
// when the schema's root validates it.
func TestLineChecksAgreeWithTheSchema(t *testing.T) {
	s := schemaUnderTest(t)
	lines := []string{
		`{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c","message":"m"}}`,
		`{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c"}}`,
		`{"jsonrpc":"2.0","method":"tool/progress"}`,
		`{"jsonrpc":"1.0","method":"tool/progress","params":{"callId":"c","message":"m"}}`,
		`{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c","message":"m"},"extra":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"notice","params":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"launch","params":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"notice","params":{"txt":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"service/call","params":{"key":"other","method":"m","params":[1]}}`,
		`{"jsonrpc":"2.0","id":[1],"method":"service/call","params":{"key":"other","method":"m","params":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tool/call","params":{"callId":"c","tool":"t","input":{}}}`,
		`{"jsonrpc":"2.0","method":"no/such","params":{}}`,
	}
	for _, l := range lines {
		schemaErr := validate(s.root, []byte(l))
		var problems []protocol.Problem
		if ps := protocol.CheckEnvelope([]byte(l)); len(ps) > 0 {
			problems = ps
		} else {
			var e struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal([]byte(l), &e)
			ps, ok := protocol.CheckParams(e.Method, protocol.PluginToHost, e.Params)
			if !ok {
				ps = append(ps, protocol.Problem{Message: "not a method a plugin sends"})
			}
			problems = ps
		}
		if (schemaErr == nil) != (len(problems) == 0) {
			t.Errorf("%.90s: the schema says %v, the checks say %v", l, schemaErr, problems)
		}
	}
}

// The hook points the schema lists are the host's own lists, which the
// bridge checks a declaration against and the host fires.
func TestHookPointsAreTheHosts(t *testing.T) {
	s := schemaUnderTest(t)
	hook := s.doc["$defs"].(map[string]any)["HookDecl"].(map[string]any)["properties"].(map[string]any)
	for key, points := range map[string][]sdk.HookPoint{"decide": sdk.DecisionPoints(), "observe": sdk.ObservationPoints()} {
		var want []any
		for _, p := range points {
			want = append(want, p.String())
		}
		got := hook[key].(map[string]any)["items"].(map[string]any)["enum"].([]any)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the schema lists %v, the host %v", key, got, want)
		}
	}
}
