package pluginkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The bench plugin's echo: what internal/testplugin's echo does (decode
// {"text"}, one progress line, answer the text), so a figure here is the
// kit's share of the conformance benchmarks' Go plugin call.
var benchEcho = tool{"echo", func(_ context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return sdk.ToolOutput{}, err
	}
	ui.Progress("echo: " + in.Text)
	return text(in.Text), nil
}}

// benchCall is a tool/call line as the host's jsonrpc2 writes it.
const benchCall = `{"id":7,"jsonrpc":"2.0","method":"tool/call","params":{"callId":"bench","name":"echo","input":{"text":"hi"},"cwd":"/work/session","session":"","turn":0}}` + "\n"

// servePipes serves the bench plugin over io.Pipe pairs, initialized, and
// returns the host's ends; cleanup ends the instance.
func servePipes(b *testing.B) (in io.Writer, out *bufio.Reader) {
	p := &Plugin{Name: "bench", Tools: []sdk.Tool{benchEcho}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- p.Serve(context.Background(), inR, outW); outW.Close() }()
	b.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	out = bufio.NewReaderSize(outR, 64<<10)
	io.WriteString(inW, `{"id":0,"jsonrpc":"2.0","method":"initialize","params":{"protocol":5,"pluginRoot":"/p","config":null,"env":{}}}`+"\n")
	if _, err := out.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	return inW, out
}

// BenchmarkServeToolCall is one tool call through Serve in this process,
// over io.Pipe: the kit's own work per call (its allocations above all),
// with no transport, no host and no JSON on the host's side. It is a
// native figure: inside a wasm guest, goroutines handing bytes to each
// other over io.Pipe cost more than the call, so the conformance
// benchmarks (BenchmarkGoPluginCall) are the ones to read for wasm.
func BenchmarkServeToolCall(b *testing.B) {
	in, out := servePipes(b)
	req := []byte(benchCall)
	for b.Loop() {
		if _, err := in.Write(req); err != nil {
			b.Fatal(err)
		}
		for {
			line, err := out.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(line, []byte(`"result"`)) {
				break
			}
		}
	}
}
