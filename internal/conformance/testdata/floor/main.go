// Command floor is the raw pipe's far end: the least a Go plugin can do to
// answer the testplugin's echo over stdin and stdout — bufio and
// encoding/json, one request at a time, no kit, no JSON-RPC library. The
// benchmarks measure every Go plugin path against a round trip to it.
package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func main() {
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	send := func(v any) {
		if enc.Encode(v) != nil || w.Flush() != nil {
			os.Exit(1)
		}
	}
	type answer struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}
	type note struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case protocol.MethodInitialize:
			send(answer{"2.0", m.ID, protocol.InitializeResult{Protocol: protocol.Version, Name: "floor"}})
		case protocol.MethodToolCall:
			var p protocol.ToolCallParams
			var in struct{ Text string }
			_ = json.Unmarshal(m.Params, &p)
			_ = json.Unmarshal(p.Input, &in)
			send(note{"2.0", protocol.NotifyToolProgress, protocol.ToolProgress{CallID: p.CallID, Tail: "echo: " + in.Text}})
			send(answer{"2.0", m.ID, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(in.Text)}}}})
		}
	}
}
