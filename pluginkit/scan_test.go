package pluginkit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// envelopeSeeds are lines the scanner must read as encoding/json does:
// the host's own, and every odd corner of JSON.
var envelopeSeeds = []string{
	benchCall,
	`{"id":1,"jsonrpc":"2.0","method":"initialize","params":{"protocol":5,"pluginRoot":"/p","config":null,"env":{}}}`,
	`{"jsonrpc":"2.0","method":"tool/cancel","params":{"callId":"c1"}}`,
	`{"id":0,"result":{"result":{"answer":"yes"}},"jsonrpc":"2.0"}`,
	`{"id":3,"error":{"code":-32602,"message":"no"},"jsonrpc":"2.0"}`,
	`{"params":{"callId":"c","name":"echo"},"method":"tool/call","id":"x"}`,
	`{"method":"tool/call","params":{"callId":"c\u0041","name":"é","input":[1,{"a":null}],"turn":-3}}`,
	`{"method":"tool/call","params":{"CallID":"c","NAME":"n"}}`,
	`{"method":"tool/call","params":{"callId":5}}`,
	`{"method":"tool/call","params":{"turn":1.5}}`,
	`{"method":"tool/call","params":{"turn":1e2}}`,
	`{"method":"tool/call","params":{"turn":99999999999999999999}}`,
	`{"method":"tool/call","params":{"callId":null,"input":null,"turn":null}}`,
	`{"method":"tool/call","params":{"callId":"a","callId":"b","unknown":{"x":[true,false,null]}}}`,
	`{"method":"tool/call","params":{"caLLid":"x"}}`,
	`{"method":"tool/call","params":{"callıd":"x","ſession":"y"}}`,
	`{"method":"tool/call","params":[1,2]}`,
	`{"method":"tool/call","params":"str"}`,
	`{"method":"tool/call","params":{"cwd":"a\tb"}}`,
	`{"method":"tool/call","params":{"cwd":"` + "\xff\xfe" + `"}}`,
	`{"met\u0068od":"x","id":1}`,
	`{"method":5,"id":1}`,
	`{"method":null,"id":1}`,
	`{"method":"a","method":null}`,
	` { "id" : 1 , "method" : "x" , "params" : { } } ` + "\r",
	`{"id":1,"method":"x"} trailing`,
	`{"id":1,"method":"x",}`,
	`{"id":01}`,
	`{"id":-}`,
	`{"id":1.}`,
	`{"id":.5}`,
	`{"id":1e}`,
	`{"id":"\x"}`,
	`{"id":"\u12"}`,
	`{"id":"` + "\x01" + `"}`,
	`{"id":tru}`,
	`{"id":[1,]}`,
	`{"a":"` + strings.Repeat("long string without stops ", 10) + `\"quoted\" \\ end"}`,
	`[1,2]`,
	`null`,
	`"just a string"`,
	`{`,
	`{"a"}`,
	`{"a":1 "b":2}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	`{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	`{"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
}

// refEnvelope is what encoding/json makes of line, naming workers exactly
// (as parseEnvelope does), worker by worker in order as its decoder goes:
// ok is false where encoding/json refuses the line, or a method that is
// neither a string nor null.
func refEnvelope(line []byte) (m envelope, ok bool) {
	if !json.Valid(line) || !bytes.HasPrefix(bytes.TrimLeft(line, " \t\r\n"), []byte("{")) {
		return m, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err) // the line is valid
		}
		switch k.(string) {
		case "id":
			m.ID = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Error = v
		case "method":
			if json.Unmarshal(v, &m.Method) != nil {
				return m, false
			}
		}
	}
	return m, true
}

func checkEnvelope(t *testing.T, line []byte) {
	var got envelope
	ok := parseEnvelope(line, &got)
	tc := got.tool
	want, wantOK := refEnvelope(line)
	if ok != wantOK {
		t.Fatalf("%q: parsed %v, encoding/json %v", line, ok, wantOK)
	}
	if !ok {
		return
	}
	toolCall := got.toolCall
	got.toolCall, got.tool = false, protocol.ToolCallParams{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
	}
	if toolCall {
		var ref protocol.ToolCallParams
		if err := json.Unmarshal(got.Params, &ref); err != nil || !reflect.DeepEqual(tc, ref) {
			t.Fatalf("%q: tool call params %+v, encoding/json %+v, %v", line, tc, ref, err)
		}
	}
	if got.Method != nil && *got.Method == protocol.MethodToolCall && len(got.Params) > 0 {
		checkToolCallParams(t, got.Params)
	}
}

func checkToolCallParams(t *testing.T, raw []byte) {
	var got, want protocol.ToolCallParams
	err := toolCallParams(raw, &got)
	werr := json.Unmarshal(raw, &want)
	if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: params %+v, %v; encoding/json %+v, %v", raw, got, err, want, werr)
	}
}

// FuzzEnvelope: go test runs it on every seed, so the seeds are the
// unit test too.
func FuzzEnvelope(f *testing.F) {
	for _, line := range envelopeSeeds {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkEnvelope(t, line)
	})
}

func FuzzToolCallParams(f *testing.F) {
	for _, line := range envelopeSeeds {
		var m envelope
		if parseEnvelope([]byte(line), &m) && m.Params != nil {
			f.Add([]byte(m.Params))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkToolCallParams(t, raw)
	})
}

// TestIDsAreEchoedAsJsonrpc2Echoes: the id an answer carries is the one
// the host's library, which the kit used to run on, would have written.
func TestIDsAreEchoedAsJsonrpc2Echoes(t *testing.T) {
	for _, raw := range []string{
		`1`, `0`, `-0`, `-1`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775808`,
		`1.5`, `1e3`, `1.0`, `"s"`, `""`, `"a<b>&c"`, `"\u0069"`, `"\/"`, `"` + "\u2028é\xff" + `"`,
		`null`, `true`, `{}`, `[]`,
	} {
		id, notif, ok := requestID(json.RawMessage(raw))
		var r jsonrpc2.Request
		rerr := r.UnmarshalJSON([]byte(`{"method":"m","id":` + raw + `}`))
		if (rerr == nil) != ok {
			t.Errorf("id %s: kit takes it %v, jsonrpc2 %v", raw, ok, rerr)
			continue
		}
		if !ok {
			continue
		}
		if notif != r.Notif {
			t.Errorf("id %s: kit notification %v, jsonrpc2 %v", raw, notif, r.Notif)
			continue
		}
		if notif {
			continue
		}
		// jsonrpc2 marshals the whole answer with encoding/json, which
		// escapes for HTML; so does the kit.
		want, _ := json.Marshal(r.ID)
		if string(id) != string(want) {
			t.Errorf("id %s: kit echoes %s, jsonrpc2 %s", raw, id, want)
		}
	}
}
