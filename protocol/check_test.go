package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func problems(ps []Problem) string {
	var s []string
	for _, p := range ps {
		if p.Unknown {
			s = append(s, p.Error()+" (unknown)")
		} else {
			s = append(s, p.Error())
		}
	}
	return strings.Join(s, "; ")
}

func TestCheckCommandSpec(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"wordcount","args":{"kind":"free"}}`, ""},
		{`{"name":"wordcount"}`, "commands[2].args: required, but missing"},
		{`{"name":"x y","args":{"kind":"none"}}`, `commands[2].name: "x y" does not match ^[A-Za-z0-9_-]+$`},
		{`{"name":"/a/b","args":{"kind":"none"}}`, `commands[2].name: "/a/b" does not match ^[A-Za-z0-9_-]+$`},
		{`{"name":"a\nb","args":{"kind":"none"}}`, `commands[2].name: "a\nb" does not match ^[A-Za-z0-9_-]+$`},
		{`{"name":"a\u001b[2Jb","args":{"kind":"none"}}`, `commands[2].name: "a\x1b[2Jb" does not match ^[A-Za-z0-9_-]+$`},
		{`{"name":"` + strings.Repeat("a", 5000) + `","args":{"kind":"none"}}`, "commands[2].name: 5000 characters long; at most 64"},
		{`{"name":"","args":{"kind":"none"}}`, "commands[2].name: must not be empty"},
		{`{"name":"w","args":{"kind":"some"}}`, `commands[2].args.kind: "some" is not one of "none", "free"`},
		{`{"name":"w","args":{"kind":"none"},"instant":"yes"}`, "commands[2].instant: want a boolean, got a string"},
		{`{"name":"w","args":{"kind":"none"},"hint":null}`, "commands[2].hint: want a string, got null"},
		{`{"name":"w","args":{"kind":"none"},"argz":1}`, "commands[2].argz: unknown key (unknown)"},
		{`{"name":"w","args":{"kind":"none"},"a b":1}`, `commands[2]["a b"]: unknown key (unknown)`},
		{`{"name":"w","args":{"kind":"none"},"` + strings.Repeat("k", 5000) + `":1}`, `commands[2]["` + strings.Repeat("k", 40) + `…"]: unknown key (unknown)`},
		{`null`, "commands[2]: want an object, got null"},
		{`"w"`, "commands[2]: want an object, got a string"},
	} {
		if got := problems(Check[sdk.CommandSpec](json.RawMessage(tc.in), "commands[2]")); got != tc.want {
			t.Errorf("%.60s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestCheckToolSpec(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"count","description":"d","inputSchema":{"type":"object"}}`, ""},
		{`{"name":"count"}`, "description: required, but missing"},
		{`{"name":"count","description":"d","inputSchema":[]}`, "inputSchema: want an object, got an array"},
		{`{"name":"count","description":"d","traits":{"readOnly":1}}`, "traits.readOnly: want a boolean, got 1"},
	} {
		if got := problems(Check[sdk.ToolSpec](json.RawMessage(tc.in), "")); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// Null only where a Go peer sends it: a required slice may be null, an
// integer may not be a fraction.
func TestCheckNullsAndNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"completions":null}`, ""},
		{`{"completions":[{"value":null}]}`, "completions[0].value: want a string, got null"},
	} {
		if got := problems(Check[CommandCompleteResult](json.RawMessage(tc.in), "")); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	if got := problems(Check[InitializeResult](json.RawMessage(`{"protocol":5.5,"name":"n","version":"1"}`), "")); got != "protocol: want an integer, got 5.5" {
		t.Errorf("got %s", got)
	}
}

func TestDecodeAnswers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"output":{"parts":[{"type":"text","text":"hi"}]}}`, ""},
		{`{"output":{"parts":null},"extra":1}`, ""}, // keys the schema does not know are ignored, as a Go peer ignores them
		{`{"parts":[{"type":"text","text":"hi"}]}`, "output: required, but missing"},
		{`{"output":null}`, "output: want an object, got null"},
		{`null`, "want an object, got null"},
		{`[1]`, "want an object, got an array"},
		{`{"output":{"parts":[],"display":{"kind":"table","rows":[1]}}}`, "output.display.rows[0]: want an array of strings, got 1"},
		{`{"output":{"parts":[],"display":{"kind":"table","rows":[[1]]}}}`, "output.display.rows[0][0]: want a string, got 1"},
		{`{"output":{"parts":"hi"}}`, "output.parts: want an array of objects, got a string"},
	} {
		_, err := Decode[ToolCallResult](json.RawMessage(tc.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	out, err := Decode[ToolCallResult](json.RawMessage(`{"output":{"parts":[{"type":"text","text":"hi"}]}}`))
	if err != nil || out.Output.Text() != "hi" {
		t.Fatalf("%+v %v", out, err)
	}
	// A result the schema lets be null: present and null is an answer.
	if _, err := Decode[ServiceCallResult](json.RawMessage(`{"result":null}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode[ServiceCallResult](json.RawMessage(`{}`)); err == nil || err.Error() != "result: required, but missing" {
		t.Fatalf("err = %v", err)
	}
	// Without an envelope, the required fields are the answer's own.
	if _, err := Decode[HookDecideResult](json.RawMessage(`{"reason":"x"}`)); err == nil || err.Error() != "outcome: required, but missing" {
		t.Fatalf("err = %v", err)
	}
}

// Every jsonschema keyword on a wire type is one Check holds (fieldsOf
// panics on one it does not), so the schema states no rule the host
// ignores.
func TestCheckHoldsEveryKeyword(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if seen[t] {
				return
			}
			seen[t] = true
			for _, f := range fieldsOf(t) {
				walk(t.Field(f.index).Type)
			}
		}
	}
	for _, v := range []any{
		InitializeParams{}, InitializeResult{}, ToolCallParams{}, ToolCallResult{}, ToolProgress{}, ToolCancel{},
		CommandRunParams{}, CommandRunResult{}, CommandCompleteParams{}, CommandCompleteResult{},
		ContextContributeParams{}, ContextContributeResult{}, CompactorCompactParams{}, CompactorCompactResult{},
		ProviderStreamParams{}, ProviderStreamResult{}, ProviderDelta{}, ProviderCancel{},
		HookDecideParams{}, HookDecideResult{}, HookObserve{}, ServiceCallParams{}, ServiceCallResult{},
		AskParams{}, AskResult{}, NoticeParams{},
	} {
		walk(reflect.TypeOf(v))
	}
	if len(seen) < 30 {
		t.Fatalf("walked only %d types", len(seen))
	}
}

func TestToolInputIsAnObjectOrNothing(t *testing.T) {
	for raw, want := range map[string]string{"": "{}", " null ": "{}", `{"a":1}`: `{"a":1}`, ` {}`: ` {}`} {
		if got, _, ok := ToolInput(json.RawMessage(raw)); !ok || string(got) != want {
			t.Errorf("ToolInput(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for raw, kind := range map[string]string{"[]": "an array", `"x"`: "a string", "1": "a number", "true": "a boolean"} {
		if got, k, ok := ToolInput(json.RawMessage(raw)); ok || got != nil || k != kind {
			t.Errorf("ToolInput(%q) = %q, %q, %v; want refused as %s", raw, got, k, ok, kind)
		}
	}
}
