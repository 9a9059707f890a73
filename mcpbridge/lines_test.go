package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The translator decodes the server's messages as the sdk does: the same
// message, or an error for the same lines.
func TestDecodeMessageIsTheSDKs(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"roots/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c","progress":1}}`,
		`{"jsonrpc":"2.0","method":"","params":null}`,
		`{"jsonrpc":"2.0","id":2,"method":null}`,
		`{"jsonrpc":"2.0","Method":"x","ID":3}`, // names match by case only
		`{"jsonrpc":"1.0","id":1,"result":1}`,
		`{"jsonrpc":"2.0","result":1}`,
		`{"jsonrpc":"2.0","id":true,"result":1}`,
		`{"jsonrpc":"2.0","id":1,"method":3}`,
		`THIS IS NOT JSON`,
		`[1,2]`,
		`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
		`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
		`{"jsonrpc":"2.0","method":"x","params":{"a":"` + strings.Repeat("[", 2000) + `"}}`,
	} {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, err := decodeMessage([]byte(line))
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v, %v\nwant %#v, %v", line, got, err, want, wantErr)
		}
	}
}

// A message costs what it holds, not a decoder's buffer: the sdk's own
// decoding allocates 32 KiB for each message and 32 KiB more for its
// method, which was most of what a tool call allocated.
func TestAMessageAllocatesLittle(t *testing.T) {
	c := newWire(lineTransport{log: io.Discard, notify: func(string, json.RawMessage) {}})
	line := []byte(`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"maxTokens":10}}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 100
	for range n {
		if m, err := c.message(line); err != nil || m == nil {
			t.Fatal(m, err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 4<<10 {
		t.Fatalf("a message allocates %d bytes, want under 4 KiB", per)
	}
}

// A line nested deeper than the sdk allows (1000) is skipped with one line
// in the log before the decoder sees it: at 4,000,000 deep the decoder
// overflows the stack (a fatal error, not a panic), and at 100,000 it takes
// seconds. A batch's messages are checked too. The next message decodes.
func TestADeepLineIsSkippedUndecoded(t *testing.T) {
	var log strings.Builder
	c := newWire(lineTransport{log: &log})
	start := time.Now()
	for _, depth := range []int{4_000_000, 100_000, 1001} {
		for _, line := range [][]byte{
			append([]byte(`{"jsonrpc":"2.0","id":`), bytes.Repeat([]byte("["), depth)...),
			append([]byte(`[{"jsonrpc":"2.0","method":"x","params":`), append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)...),
		} {
			if msgs := c.decode(line); len(msgs) != 0 {
				t.Fatalf("depth %d: %v", depth, msgs)
			}
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %v", d)
	}
	if n := strings.Count(log.String(), "mcpbridge: skipped a line on the server's stdout (not a JSON-RPC message: unmarshaling jsonrpc message: nested deeper than 1000 arrays and objects)"); n != 6 {
		t.Errorf("%d notices, want one a line:\n%.2000s", n, log.String())
	}
	if msgs := c.decode([]byte(`{"jsonrpc":"2.0","method":"x","params":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`)); len(msgs) != 1 {
		t.Fatalf("the next message: %v", msgs)
	}
}
