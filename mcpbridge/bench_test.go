//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28 but still functional: the bare client asks for it as bingo does.

package mcpbridge_test

import (
	"context"
	"encoding/json"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/exec"
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

// BenchmarkMCPToolCallExec is a warm tool call to a real MCP server
// process, the Go example wordcount-mcp: through bingo (the proxy tool,
// the bridge, the plugin wire, the translator, the exec transport), and
// straight from a go-sdk client on the server's stdio, to another process
// of the same server, interleaved call by call. The figure is the ratio of
// the medians: what bingo adds to a call.
//
// The bare client asks what bingo asks of the server: progress (bingo
// shows it to the person) and the server's logging at info (bingo writes
// it to the plugin's log). Asked nothing, the server skips its two
// progress notifications and its log line, and the ratio would count
// that work against the translation (bingo/sdk-quiet, reported beside
// it, is that ratio).
func BenchmarkMCPToolCallExec(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "wordcount-mcp")
	if out, err := osexec.Command("go", "build", "-o", bin, "../examples/plugins/wordcount-mcp").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	ctx := context.Background()
	var heard atomic.Int64 // progress and log notifications, handled as bingo handles them: read, then dropped
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { heard.Add(1) },
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { heard.Add(1) },
	}).Connect(ctx, &mcp.CommandTransport{Command: osexec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	p := bridge.New(bridge.Options{Name: "wc", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(exec.New(exec.Config{Command: bin}), mcpbridge.Config{Name: "wc", Version: "1"})})
	defer p.Close()
	if _, err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var tl sdk.Tool
	for _, t := range p.Contributions().Tools {
		if t.Spec().Name == "plugin__wc__count" {
			tl = t
		}
	}
	if tl == nil {
		b.Fatal("no tool plugin__wc__count")
	}
	input := json.RawMessage(`{"text":"one two three\nfour five\n"}`)
	call := sdk.ToolCall{ID: "c", Name: tl.Spec().Name, Input: input}
	ui := &testutil.RecordingUI{}
	asked := &mcp.CallToolParams{Name: "count", Arguments: input, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}}
	asked.SetProgressToken("c")
	quiet := &mcp.CallToolParams{Name: "count", Arguments: input}
	var bare, bareQuiet, bingo []float64
	timed := func(into *[]float64, f func() error) {
		began := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, float64(time.Since(began).Microseconds()))
	}
	for b.Loop() {
		timed(&bare, func() error { _, err := cs.CallTool(ctx, asked); return err })
		timed(&bingo, func() error { _, err := tl.Call(ctx, call, ui); return err })
		timed(&bareQuiet, func() error { _, err := cs.CallTool(ctx, quiet); return err })
	}
	if heard.Load() == 0 {
		b.Fatal("the bare client heard no progress or log: it does not ask what bingo asks")
	}
	b.ReportMetric(median(bare), "sdk-µs")
	b.ReportMetric(median(bingo), "bingo-µs")
	b.ReportMetric(median(bingo)/median(bare), "bingo/sdk")
	// Beside it, for the record: against a client that asks for neither,
	// whose server does less.
	b.ReportMetric(median(bingo)/median(bareQuiet), "bingo/sdk-quiet")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
