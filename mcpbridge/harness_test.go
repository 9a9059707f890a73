package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errExit is the in-process server's exit, when its crash tool runs.
var errExit = errors.New("exit status 3")

// faultServer runs package mcpfault's server in process, one server per
// instance, as a real one runs per process. starts counts the instances.
func faultServer(starts *int) transport.Transport {
	var mu sync.Mutex
	return mem.New(func(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
		mu.Lock()
		if starts != nil {
			*starts++
		}
		mu.Unlock()
		exited := make(chan struct{})
		var once sync.Once
		sideband := mcpfault.NewSideband(stdin, stdout)
		srv := mcpfault.New(mcpfault.Process{Exit: func(int) { once.Do(func() { close(exited) }) }, Done: ctx.Done(),
			Print: func(line string) { _, _ = io.WriteString(stdout, line+"\n") }, Sideband: sideband})
		ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(sideband), Writer: nopCloser{stdout}}, nil)
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- ss.Wait() }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			err = nil
		case <-exited:
			err = errExit
		}
		// The instance ends: its pipes close, and with them the session.
		if c, ok := stdin.(io.Closer); ok {
			c.Close()
		}
		if c, ok := stdout.(io.Closer); ok {
			c.Close()
		}
		ss.Close()
		<-done
		return err
	}, nil)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// rig is the fault server behind the translator behind a real bridge.
type rig struct {
	t       testing.TB
	p       *bridge.Plugin
	notices *testutil.Collector[bridge.Notice]
	log     *testutil.SyncBuffer
	starts  int
}

type rigOpts struct {
	cfg       mcpbridge.Config
	config    json.RawMessage
	deadlines bounds.Deadlines
	redecl    func(protocol.InitializeResult)
	inner     transport.Transport // the server; nil is the fault server
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	r := &rig{t: t, notices: testutil.NewCollector[bridge.Notice](), log: &testutil.SyncBuffer{}}
	o.cfg.Name, o.cfg.Version, o.cfg.Log = "fault", "1", r.log
	if o.inner == nil {
		o.inner = faultServer(&r.starts)
	}
	var redeclared func(protocol.InitializeResult, bool)
	if o.redecl != nil {
		redeclared = func(d protocol.InitializeResult, _ bool) { o.redecl(d) }
	}
	r.p = bridge.New(bridge.Options{
		Name: "fault", Transport: mcpbridge.Wrap(o.inner, o.cfg), Config: o.config,
		Deadlines: o.deadlines, Raise: r.notices.Add, Log: r.log, Probe: mcpbridge.Probe,
		Backoff: bridge.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Redeclared: redeclared,
	})
	t.Cleanup(func() { r.p.Close() })
	if _, err := r.p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return r
}

func (r *rig) tool(name string) sdk.Tool {
	r.t.Helper()
	for _, tl := range r.p.Contributions().Tools {
		if tl.Spec().Name == "plugin__fault__"+name {
			return tl
		}
	}
	r.t.Fatalf("no tool %s", name)
	return nil
}

func (r *rig) command(name string) sdk.Command {
	r.t.Helper()
	for _, c := range r.p.Contributions().Commands {
		if c.Spec().Name == name {
			return c
		}
	}
	r.t.Fatalf("no command %s", name)
	return nil
}

// call runs tool name with input.
func (r *rig) call(ctx context.Context, name, input string, u sdk.CallUI) (sdk.ToolOutput, error) {
	r.t.Helper()
	if u == nil {
		u = &testutil.RecordingUI{}
	}
	return r.tool(name).Call(ctx, sdk.ToolCall{ID: "c-" + name, Name: "plugin__fault__" + name, Input: json.RawMessage(input)}, u)
}

func texts(o sdk.ToolOutput) string {
	var s []string
	for _, p := range o.Parts {
		s = append(s, p.Text)
	}
	return strings.Join(s, "|")
}
