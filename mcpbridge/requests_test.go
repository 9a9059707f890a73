package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An elicitation is asked on the call it is part of: the call the sdk's
// ctx names, else (a server of a protocol before 2026-07-28, whose wire
// names none) the one call running; with none, or several, it is
// declined, the log saying why, and no one is asked.
func TestElicitOutsideACall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctxCall string
		running []string
		want    string // the call asked on, or the log's reason
	}{
		{"none running", "", nil, "while none of the server's tool calls was running"},
		{"several running", "", []string{"a", "b"}, "while 2 of the server's tool calls were running"},
		{"one running", "", []string{"a"}, "a"},
		{"named", "b", []string{"a", "b"}, "b"},
		{"named, ended", "c", []string{"a"}, "its tool call c has ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &strings.Builder{}
			s := &server{cfg: Config{Log: log}}
			for _, id := range tc.running {
				s.calls = append(s.calls, &call{id: id})
			}
			ctx := context.Background()
			if tc.ctxCall != "" {
				ctx = context.WithValue(ctx, callKey{}, tc.ctxCall)
			}
			id, err := s.askingCall(ctx)
			if id != "" {
				if id != tc.want {
					t.Errorf("asked on %q, want %q", id, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("askingCall: %v, want %q", err, tc.want)
			}
			res, err := s.elicit(ctx, &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "name?"}})
			if err != nil || res.Action != "decline" || !strings.Contains(log.String(), "mcpbridge: elicitation answered decline: it was sent") &&
				!strings.Contains(log.String(), "has ended") {
				t.Errorf("elicit = %+v, %v; log %q; want a decline, logged", res, err, log)
			}
		})
	}
}

// asker answers a form's questions in turn, recording them.
type asker struct {
	answers []string
	asked   []string
	err     error // once the answers run out
}

func (a *asker) ask(q string) (string, error) {
	a.asked = append(a.asked, q)
	if len(a.answers) == 0 {
		return "", cmpOrErr(a.err)
	}
	x := a.answers[0]
	a.answers = a.answers[1:]
	return x, nil
}

func cmpOrErr(err error) error {
	if err == nil {
		return errors.New("no more answers")
	}
	return err
}

// shirt is a form of every kind of field: a choice by enum with a default,
// a titled choice (oneOf), a bounded integer, a boolean with a default,
// several choices, and an optional string.
var shirt = map[string]any{"type": "object", "required": []any{"size", "count"}, "properties": map[string]any{
	"colour": map[string]any{"type": "string", "enum": []any{"red", "green", "blue"}, "default": "green"},
	"size":   map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "s", "title": "Small"}, map[string]any{"const": "l", "title": "Large"}}},
	"count":  map[string]any{"type": "integer", "minimum": 1, "description": "how many"},
	"gift":   map[string]any{"type": "boolean", "default": false},
	"extras": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"pocket", "collar"}}},
	"note":   map[string]any{"type": "string", "maxLength": 5},
}}

// A form is shown whole, then filled in field by field: an empty answer
// declines at first, then takes a default, leaves an optional field out,
// or is asked again for a required one; an invalid answer is asked again,
// saying what was wrong, up to three asks.
func TestFormFill(t *testing.T) {
	one := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	for _, tc := range []struct {
		name    string
		schema  any
		answers []string
		err     error
		action  string
		content map[string]any
		asked   []string // what each question says (a substring), in turn
		log     string   // why, when the person did not choose the action
	}{{
		name: "no fields", schema: nil, answers: []string{"ok"}, action: "accept",
		asked: []string{"Sure? — an empty answer declines"},
	}, {
		name: "one field", schema: one, answers: []string{"42"}, action: "accept", content: map[string]any{"n": int64(42)},
		asked: []string{"Sure? (n (integer; optional)) — an empty answer declines"},
	}, {
		name: "one field, asked again", schema: one, answers: []string{"x", "4.5", "7"}, action: "accept", content: map[string]any{"n": int64(7)},
		asked: []string{"Sure? (n", "\"x\" is not a whole number — asked again (2 of 3):\nn (integer; optional) — an empty answer declines",
			"\"4.5\" is not a whole number — asked again (3 of 3):\nn (integer"},
	}, {
		name: "one field, never valid", schema: one, answers: []string{"x", "y", "z", "1"}, action: "decline",
		asked: []string{"Sure?", "(2 of 3)", "(3 of 3)"}, log: `3 answers were not valid, the last: "z" is not a whole number`,
	}, {
		name: "one field, declined", schema: one, answers: []string{""}, action: "decline", asked: []string{"Sure?"},
	}, {
		name: "no one to ask", schema: one, err: errors.New("no terminal"), action: "cancel", asked: []string{"Sure?"},
		log: "no one could be asked: no terminal",
	}, {
		name: "form", schema: shirt, answers: []string{"y", "", "", "2", "pocket, Collar", "", "", "LARGE"}, action: "accept",
		content: map[string]any{"colour": "green", "count": int64(2), "gift": false, "size": "l", "extras": []any{"pocket", "collar"}},
		asked: []string{
			"Sure?\nFields: colour (one of red, green, blue; optional; default green); count (integer; required): how many; " +
				"extras (any of pocket, collar, separated by commas; optional); gift (yes or no; optional; default no); " +
				"note (string; optional); size (one of s \"Small\", l \"Large\"; required) — answer y to fill them in; an empty answer declines",
			"colour (one of red, green, blue; optional; default green) — an empty answer takes the default",
			"count (integer; required): how many — an empty answer is asked again",
			"count is required — asked again (2 of 3):\ncount",
			"extras (any of pocket, collar, separated by commas; optional) — an empty answer leaves it out",
			"gift (yes or no; optional; default no) — an empty answer takes the default",
			"note (string; optional) — an empty answer leaves it out",
			"size (one of s \"Small\", l \"Large\"; required) — an empty answer is asked again",
		},
	}, {
		name: "form, invalid answers", schema: shirt, answers: []string{"sure", "y", "blue", "0", "3", "hat", "pocket", "maybe", "yes", "toolong", "ok", "m", "s"},
		action: "accept", content: map[string]any{"colour": "blue", "count": int64(3), "gift": true, "size": "s", "extras": []any{"pocket"}, "note": "ok"},
		asked: []string{"Sure?", `"sure" is not y — asked again (2 of 3):` + "\nFields: colour", "colour (",
			"count (", "0 is less than 1, the least allowed — asked again (2 of 3)", "extras (", `"hat" is not one of pocket, collar`,
			"gift (", `"maybe" is not yes or no`, "note (", `toolong is not valid: maxLength`, "size (", `"m" is not one of s, l`},
	}, {
		name: "form, declined", schema: shirt, answers: []string{""}, action: "decline", asked: []string{"Sure?\nFields:"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := readForm(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			a := &asker{answers: tc.answers, err: tc.err}
			res, err := f.fill("Sure?", a.ask)
			if res.Action != tc.action || !reflect.DeepEqual(res.Content, tc.content) {
				t.Errorf("fill = %s %v, want %s %v", res.Action, res.Content, tc.action, tc.content)
			}
			if tc.log == "" && err != nil || tc.log != "" && (err == nil || !strings.Contains(err.Error(), tc.log)) {
				t.Errorf("why: %v, want %q", err, tc.log)
			}
			if len(a.asked) != len(tc.asked) {
				t.Fatalf("asked %d questions, want %d:\n%s", len(a.asked), len(tc.asked), strings.Join(a.asked, "\n--\n"))
			}
			for i, q := range a.asked {
				if !strings.Contains(q, tc.asked[i]) {
					t.Errorf("question %d:\n%s\nwant it to say:\n%s", i+1, q, tc.asked[i])
				}
			}
		})
	}
}

// A server's long error line is cut for its notice on a character: a cut
// inside one made the notice invalid UTF-8.
func TestFirstLineCutsOnACharacter(t *testing.T) {
	got := firstLine(strings.Repeat("€", 300) + "\nsecond")
	if !utf8.ValidString(got) || got != strings.Repeat("€", 200)+"…" {
		t.Errorf("firstLine = %q, want 200 € and an ellipsis", got)
	}
}

// A form is one question a field: one with more fields than bingo asks
// is refused whole, before the person is asked anything.
func TestFormTooManyFields(t *testing.T) {
	props := map[string]any{}
	for i := range maxFields + 1 {
		props[fmt.Sprintf("f%03d", i)] = map[string]any{"type": "string"}
	}
	_, err := readForm(map[string]any{"type": "object", "properties": props})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d fields", maxFields+1)) {
		t.Fatalf("err = %v, want the form refused for its fields", err)
	}
	delete(props, "f000")
	if _, err := readForm(map[string]any{"type": "object", "properties": props}); err != nil {
		t.Fatalf("%d fields: %v", maxFields, err)
	}
}
