package pluginkit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

var stringSeeds = []string{
	"", "hi", "echo: hi", `quote " backslash \ slash /`, "<script>&amp;</script>",
	"tab\tnewline\nreturn\rbell\aback\bfeed\fnul\x00del\x7f", "naïve café — €", "\u2028\u2029",
	"bad \xff byte, cut \xe2\x82", strings.Repeat("long plain text ", 20), strings.Repeat("é<", 9),
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, encoding/json %s", s, got, want)
		}
	})
}

// TestToolOutputIsWhatEncodingJSONWrites holds the hand-written encoding to
// sdk.ToolOutput's and sdk.Part's fields as they are: a field added to
// either must be added to appendToolOutput too.
func TestToolOutputIsWhatEncodingJSONWrites(t *testing.T) {
	if n := reflect.TypeFor[sdk.ToolOutput]().NumField(); n != 3 {
		t.Fatalf("sdk.ToolOutput has %d fields; appendToolOutput writes 3", n)
	}
	if n := reflect.TypeFor[sdk.Part]().NumField(); n != 2 {
		t.Fatalf("sdk.Part has %d fields; appendToolOutput writes 2", n)
	}
	view := &sdk.View{Kind: sdk.ViewTable, Title: "a<b>", Columns: []string{"x"}, Rows: [][]string{{"1"}}}
	for _, o := range []sdk.ToolOutput{
		{},
		{Parts: []sdk.Part{}},
		{Parts: []sdk.Part{sdk.TextPart("hi")}},
		{Parts: []sdk.Part{sdk.TextPart("a"), {Type: "other", Text: stringSeeds[5]}}, IsError: true},
		{Parts: []sdk.Part{sdk.TextPart(stringSeeds[8])}, Display: view},
		{Display: &sdk.View{}},
	} {
		want, _ := json.Marshal(o)
		got, err := appendToolOutput(nil, o)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v:\n got %s, %v\nwant %s", o, got, err, want)
		}
	}
}

// TestMessagesAreTheBytesJsonrpc2Wrote: every message the kit writes is
// the line sourcegraph/jsonrpc2 (on which the kit used to run) wrote for
// it, byte for byte.
func TestMessagesAreTheBytesJsonrpc2Wrote(t *testing.T) {
	line := func(send func(w *wire) error) string {
		var out bytes.Buffer
		w := newWire(strings.NewReader(""), &out)
		if err := send(w); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	jsonrpc2Line := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	answer := func(id jsonrpc2.ID, res any) string {
		r := &jsonrpc2.Response{ID: id}
		if err := r.SetResult(res); err != nil {
			t.Fatal(err)
		}
		return jsonrpc2Line(r)
	}
	notify := func(method string, params any) string {
		r := &jsonrpc2.Request{Method: method, Notif: true}
		r.SetParams(params)
		return jsonrpc2Line(r)
	}
	out := sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(stringSeeds[5])}, Display: &sdk.View{Kind: sdk.ViewText, Text: "<x>"}, IsError: true}
	for _, c := range []struct {
		name      string
		got, want string
	}{
		{"tool result", line(func(w *wire) error { return w.sendResult(json.RawMessage("7"), protocol.ToolCallResult{Output: out}) }),
			answer(jsonrpc2.ID{Num: 7}, protocol.ToolCallResult{Output: out})},
		{"string id", line(func(w *wire) error {
			return w.sendResult(json.RawMessage(`"a\u003cb"`), protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{}}})
		}), answer(jsonrpc2.ID{Str: "a<b", IsString: true}, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{}}})},
		{"other result", line(func(w *wire) error {
			return w.sendResult(json.RawMessage("8"), protocol.CommandCompleteResult{Completions: []sdk.Completion{{Value: "a&b"}}})
		}), answer(jsonrpc2.ID{Num: 8}, protocol.CommandCompleteResult{Completions: []sdk.Completion{{Value: "a&b"}}})},
		{"error", line(func(w *wire) error {
			return w.sendError(json.RawMessage("9"), &wireError{Code: codeInvalidParams, Message: stringSeeds[6]})
		}), jsonrpc2Line(&jsonrpc2.Response{ID: jsonrpc2.ID{Num: 9}, Error: &jsonrpc2.Error{Code: codeInvalidParams, Message: stringSeeds[6]}})},
		{"progress", line(func(w *wire) error {
			return w.sendProgress(protocol.ToolProgress{CallID: "c<1>", Tail: stringSeeds[8]})
		}),
			notify(protocol.NotifyToolProgress, protocol.ToolProgress{CallID: "c<1>", Tail: stringSeeds[8]})},
		{"delta", line(func(w *wire) error {
			return w.send(notifyMsg{JSONRPC: "2.0", Method: protocol.NotifyProviderDelta, Params: protocol.ProviderDelta{StreamID: "s", Event: sdk.StreamEvent{Kind: sdk.EventText, Text: "<"}}})
		}), notify(protocol.NotifyProviderDelta, protocol.ProviderDelta{StreamID: "s", Event: sdk.StreamEvent{Kind: sdk.EventText, Text: "<"}})},
		{"service call", line(func(w *wire) error {
			return w.send(requestMsg{ID: 3, JSONRPC: "2.0", Method: protocol.MethodServiceCall, Params: protocol.ServiceCallParams{Key: "k", Method: "m", Params: json.RawMessage(`{"b":1,"a":"<"}`)}})
		}), func() string {
			r := &jsonrpc2.Request{Method: protocol.MethodServiceCall, ID: jsonrpc2.ID{Num: 3}}
			r.SetParams(protocol.ServiceCallParams{Key: "k", Method: "m", Params: json.RawMessage(`{"b":1,"a":"<"}`)})
			return jsonrpc2Line(r)
		}()},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}

// TestAnAnswerThatCannotBeEncodedIsAnError: jsonrpc2 left such a call
// unanswered until the host's deadline; the kit says why at once.
func TestAnAnswerThatCannotBeEncodedIsAnError(t *testing.T) {
	var out bytes.Buffer
	s := &server{p: &Plugin{Name: "kit"}, w: newWire(strings.NewReader(""), &out)}
	s.reply(json.RawMessage("1"), protocol.ServiceCallResult{Result: json.RawMessage("{bad")}, nil)
	var m struct {
		Error *wireError
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Error == nil || m.Error.Code != codeInternalError ||
		!strings.Contains(m.Error.Message, "cannot be encoded") {
		t.Errorf("answer = %s (%v)", out.Bytes(), err)
	}
}
