package mcpbridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// BenchmarkToolCall is one echo call to the in-process fault server: as
// the host makes it (proxy, bridge, plugin wire, translator, MCP), and,
// as the baseline in the same run, straight from a go-sdk client. The
// ratio of the two is what the translation and the bridge cost.
func BenchmarkToolCall(b *testing.B) {
	b.Run("baseline-sdk-client", func(b *testing.B) {
		ct, st := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ss, err := mcpfault.New(mcpfault.Process{Exit: func(int) {}, Done: ctx.Done()}).Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := json.RawMessage(`{"text":"hi"}`)
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("through-bridge", func(b *testing.B) {
		r := newRig(b, rigOpts{})
		tl := r.tool("echo")
		ui := &testutil.RecordingUI{}
		call := sdk.ToolCall{ID: "c", Name: tl.Spec().Name, Input: json.RawMessage(`{"text":"hi"}`)}
		b.ResetTimer()
		for b.Loop() {
			if _, err := tl.Call(context.Background(), call, ui); err != nil {
				b.Fatal(err)
			}
		}
	})
}
