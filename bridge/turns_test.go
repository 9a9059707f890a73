package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// pipedTransport runs a scripted plugin over mem, with its stdout reaching
// the host through an OS pipe whose reads can be interrupted, as exec's
// are: so waiting callers read the wire in turns (pendingCall.await).
type pipedTransport struct{ transport.Transport }

func (t pipedTransport) Start(ctx context.Context) (transport.Conn, error) {
	c, err := t.Transport.Start(ctx)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		c.Kill()
		return nil, err
	}
	pc := &pipedConn{Conn: c, r: r, copied: make(chan struct{})}
	go func() {
		defer close(pc.copied)
		_, _ = io.Copy(w, c) // until the plugin's stdout ends, or Kill
		w.Close()
	}()
	return pc, nil
}

type pipedConn struct {
	transport.Conn
	r      *os.File
	copied chan struct{}
	mu     sync.Mutex
	killed bool
}

func (c *pipedConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.killed {
		err = transport.ErrKilled
	}
	return n, err
}

// SetReadDeadline leaves Kill's deadline, as exec's conn does.
func (c *pipedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.killed {
		return transport.ErrKilled
	}
	return c.r.SetReadDeadline(t)
}

func (c *pipedConn) Kill() error {
	c.mu.Lock()
	c.killed = true
	_ = c.r.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
	return c.Conn.Kill()
}

func (c *pipedConn) Wait() error {
	err := c.Conn.Wait()
	<-c.copied
	c.r.Close()
	return err
}

func startPiped(t *testing.T, s script) *env {
	t.Helper()
	return mustStart(t, s, func(o *Options) { o.Transport = pipedTransport{mem.New(s.main, o.Log)} })
}

// Many tool calls at once, over a wire read in turns: the plugin answers
// them in the reverse of their order, each after a progress line, and
// asks the host a question in between; every caller gets its own answer
// and its own progress, and the plugin its answer.
func TestTurnsManyCallsOutOfOrder(t *testing.T) {
	const calls = 24
	var mu sync.Mutex
	var held []msg
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			mu.Lock()
			held = append(held, m)
			full := len(held) == calls
			mu.Unlock()
			if !full {
				return true
			}
			for i := len(held) - 1; i >= 0; i-- {
				var tc protocol.ToolCallParams
				json.Unmarshal(held[i].Params, &tc)
				p.notify(protocol.NotifyToolProgress, protocol.ToolProgress{CallID: tc.CallID, Tail: "at " + tc.CallID})
				if i == calls/2 {
					p.request(1, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "notice",
						Params: json.RawMessage(`{"level":"info","message":"half way"}`)})
				}
				echoAnswer(p, held[i])
			}
		case m.ID != nil && m.Method == "": // the host's answer to the service call
		}
		return true
	}}
	e := startPiped(t, s)
	e.plugin.mu.Lock()
	turns := e.plugin.sup.inst.wire.turns != nil
	e.plugin.mu.Unlock()
	if !turns {
		t.Fatal("the piped wire does not read in turns")
	}
	tl := e.tool("plugin__t__echo")
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			id := fmt.Sprintf("call%d", i)
			u := &ui{}
			out, err := tl.Call(context.Background(), sdk.ToolCall{ID: id, Name: tl.Spec().Name, Input: json.RawMessage(fmt.Sprintf("%d", i)), Cwd: "/"}, u)
			if err != nil || len(out.Parts) != 1 || out.Parts[0].Text != fmt.Sprintf("echo %d", i) {
				t.Errorf("%s: %+v, %v", id, out, err)
			}
			u.mu.Lock()
			defer u.mu.Unlock()
			if len(u.progress) != 1 || u.progress[0] != "at "+id {
				t.Errorf("%s: progress %q", id, u.progress)
			}
		})
	}
	wg.Wait()
	e.plugin.mu.Lock()
	read := e.plugin.sup.inst.wire.turns.turnReads.Load()
	e.plugin.mu.Unlock()
	if read == 0 {
		t.Error("no caller read the wire: every answer went through the wire's reader")
	}
	if n := e.notices.Next(t); n.Message != "half way" {
		t.Errorf("notice %q, want the plugin's", n.Message)
	}
}

// A plugin dying while callers wait, one of them reading the wire: every
// call answers sdk.ErrUnavailable, the death has its one notice, and the
// next call respawns it and is answered.
func TestTurnsDeathWhileACallerReads(t *testing.T) {
	const waiting = 5
	arrived := make(chan struct{}, waiting)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		var tc protocol.ToolCallParams
		json.Unmarshal(m.Params, &tc)
		switch string(tc.Input) {
		case `"wait"`:
			arrived <- struct{}{} // held: its caller waits, reading in its turn
		case `"die"`:
			return false
		default:
			echoAnswer(p, m)
		}
		return true
	}}
	e := startPiped(t, s)
	tl := e.tool("plugin__t__echo")
	var wg sync.WaitGroup
	for i := range waiting + 1 {
		wg.Go(func() {
			input := `"wait"`
			if i == waiting {
				for range waiting {
					<-arrived // the others are waiting, one of them reading
				}
				input = `"die"`
			}
			_, err := tl.Call(context.Background(), sdk.ToolCall{ID: fmt.Sprint(i), Name: tl.Spec().Name, Input: json.RawMessage(input), Cwd: "/"}, &ui{})
			if !errors.Is(err, sdk.ErrUnavailable) {
				t.Errorf("call %d: %v, want ErrUnavailable", i, err)
			}
		})
	}
	wg.Wait()
	if n := e.notices.Next(t); !strings.Contains(n.Message, "stopped") {
		t.Fatalf("notice %q, want the death's", n.Message)
	}
	if out, err := call(t, tl, context.Background(), "after", nil); err != nil || len(out.Parts) != 1 {
		t.Fatalf("after the death: %+v, %v", out, err)
	}
}

// A caller reading the wire when its deadline passes stops reading and
// fails with a DeadlineError; the next call reads on.
func TestTurnsDeadlineWhileReading(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		var tc protocol.ToolCallParams
		json.Unmarshal(m.Params, &tc)
		if string(tc.Input) != `"slow"` {
			echoAnswer(p, m)
		}
		return true
	}}
	e := mustStart(t, s, func(o *Options) {
		o.Transport = pipedTransport{mem.New(s.main, o.Log)}
		o.Deadlines.Tool = 100 * time.Millisecond
		o.Deadlines.Grace = time.Hour // the unanswered call must not make it wedged
	})
	tl := e.tool("plugin__t__echo")
	_, err := tl.Call(context.Background(), sdk.ToolCall{ID: "slow", Name: tl.Spec().Name, Input: json.RawMessage(`"slow"`), Cwd: "/"}, &ui{})
	var de *DeadlineError
	if !errors.As(err, &de) {
		t.Fatalf("slow call: %v, want a DeadlineError", err)
	}
	if out, err := call(t, tl, context.Background(), "next", nil); err != nil || len(out.Parts) != 1 {
		t.Fatalf("next call: %+v, %v", out, err)
	}
}
