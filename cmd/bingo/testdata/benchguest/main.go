// Command benchguest is the smallest wasm plugin a benchmark can install
// many of (BenchmarkLazyRSS): it answers the handshake as os.Args[1]
// ("wordcount" without one), declaring one tool, count, which answers
// what the wordcount example answers for the benchmark's notes.txt.
//
// Built by the benchmark: GOOS=wasip1 GOARCH=wasm go build ./testdata/benchguest
package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

func main() {
	name := "wordcount"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), protocol.DefaultMaxLine)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue // a notification: nothing to answer
		}
		var result any
		switch m.Method {
		case protocol.MethodInitialize:
			result = map[string]any{"protocol": protocol.Version, "name": name, "version": "1",
				"tools": []any{map[string]any{"name": "count", "description": "count", "inputSchema": map[string]any{"type": "object"}}}}
		case protocol.MethodToolCall:
			result = map[string]any{"output": map[string]any{"parts": []any{map[string]any{"type": "text", "text": "notes.txt: 2 lines, 9 words"}}}}
		default:
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		os.Stdout.Write(append(b, '\n'))
	}
}
