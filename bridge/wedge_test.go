package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// deaf answers the handshake, then never reads its stdin again.
func deaf(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
	p := &peer{in: bufio.NewReader(stdin), out: stdout}
	m, err := p.read()
	if err != nil {
		return nil
	}
	p.reply(m, basicDecl())
	<-ctx.Done() // Kill
	return nil
}

// A plugin that stops reading its input blocks every write to it: a write
// still blocked past the request's deadline marks it wedged, with one
// notice, and the next read respawns it.
func TestPluginNotReadingItsInput(t *testing.T) {
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = mem.New(deaf, nil)
		o.Deadlines.Tool = 100 * time.Millisecond
		o.Deadlines.Grace = 100 * time.Millisecond
	})
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`) // past any pipe buffer
	start := time.Now()
	_, err := e.tool("plugin__t__echo").Call(context.Background(), sdk.ToolCall{ID: "c", Input: big}, &ui{})
	if !errors.Is(err, sdk.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "not reading its input: sending tool/call blocked for 100ms") {
		t.Fatalf("notice = %v", n)
	}
	waitStatus(t, e.plugin, "dead")
	// A notification blocks the same way, and is bounded by Grace.
	e2 := mustStart(t, script{}, func(o *Options) {
		o.Transport = mem.New(deaf, nil)
		o.Deadlines.Grace = 100 * time.Millisecond
	})
	if err := e2.plugin.Notify(context.Background(), protocol.NotifyHookObserve, big); err == nil {
		t.Fatal("a notification to a plugin not reading must fail, not block")
	}
}

// A reader waits for a respawn no longer than its own deadline; the
// respawn goes on and serves the next read.
func TestRespawnWaitIsBoundedByTheDeadline(t *testing.T) {
	release := make(chan struct{})
	var starts atomic.Int32
	s := dieOnRequest()
	s.init = func(p *peer, m msg) {
		if starts.Add(1) > 1 {
			<-release // the respawn's handshake is slow
		}
		p.reply(m, basicDecl())
	}
	e := mustStart(t, s, func(o *Options) { o.Deadlines.Tool = 300 * time.Millisecond })
	tl := e.tool("plugin__t__echo")
	tl.Call(context.Background(), sdk.ToolCall{ID: "d", Input: json.RawMessage(`"die"`)}, &ui{})
	waitStatus(t, e.plugin, "dead")
	start := time.Now()
	_, err := call(t, tl, context.Background(), "c1", nil)
	if !errors.Is(err, sdk.ErrUnavailable) || !strings.Contains(err.Error(), "still restarting after 300ms") || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	close(release)
	waitStatus(t, e.plugin, "running")
	if out, err := call(t, tl, context.Background(), "c2", nil); err != nil || out.Text() != "echo {}" {
		t.Fatalf("%v %v", out, err)
	}
}

// A respawn whose handshake fails backs off like a death. It is part of
// the death, which has had its notice: the read that tried, and the
// plugin's log, say why.
func TestFailedRestart(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	var starts atomic.Int32
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool { return false }} // every call kills it
	s.init = func(p *peer, m msg) {
		if starts.Add(1) == 1 {
			p.reply(m, basicDecl())
			return
		}
		d := basicDecl()
		d.Protocol = 4 // every respawn is refused
		p.reply(m, d)
	}
	e := mustStart(t, s, func(o *Options) {
		o.Now = clock.Now
		o.Backoff = Backoff{Initial: time.Second, Max: time.Minute, Reset: time.Hour}
	})
	tl := e.tool("plugin__t__echo")
	call(t, tl, context.Background(), "c1", nil) // death 1
	waitStatus(t, e.plugin, "dead")
	_, err := call(t, tl, context.Background(), "c2", nil) // respawn at once; refused
	if !errors.Is(err, sdk.ErrUnavailable) || !strings.Contains(err.Error(), "speaks protocol 4") {
		t.Fatalf("err = %v", err)
	}
	if _, err := call(t, tl, context.Background(), "c3", nil); err == nil || !strings.Contains(err.Error(), "next restart in 1s") {
		t.Fatalf("after a failed restart the backoff is Initial: %v", err)
	}
	if n := strings.Count(e.log.String(), "restart failed: speaks protocol 4"); n != 1 || starts.Load() != 2 {
		t.Fatalf("failed restarts in the log = %d, starts = %d", n, starts.Load())
	}
	if n := e.notices.All(); len(n) != 1 || !strings.HasPrefix(n[0].Message, "stopped") {
		t.Fatalf("notices = %v, want the death's one", n)
	}
}

// Cancelling a tool call withdraws the question it has put to the person.
func TestCancelWithdrawsTheQuestion(t *testing.T) {
	answered := make(chan msg, 1)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			var tc protocol.ToolCallParams
			json.Unmarshal(m.Params, &tc)
			go func(m msg) {
				p.request(9, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "ask",
					Params: json.RawMessage(`{"call":"` + tc.CallID + `","question":"really?"}`)})
				a := <-answered
				p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(a.Error.Message)}}})
			}(m)
		case m.ID != nil && m.Method == "":
			answered <- m
		}
		return true
	}}
	e := mustStart(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	u := &blockingUI{asked: make(chan struct{})}
	go func() { <-u.asked; cancel() }()
	out, err := call(t, e.tool("plugin__t__echo"), ctx, "c1", u)
	if err != nil || !strings.Contains(out.Text(), "ask: context canceled") {
		t.Fatalf("%v %v", out, err)
	}
}

// blockingUI's Ask waits until its question is withdrawn.
type blockingUI struct {
	ui
	asked chan struct{}
}

func (u *blockingUI) Ask(ctx context.Context, _ string) (string, error) {
	close(u.asked)
	<-ctx.Done()
	return "", ctx.Err()
}

// The one notice of a death is raised before the call it killed returns:
// a caller that ends the run at once (bingo call) must not lose it.
func TestDeathNoticeBeforeTheFailedCallReturns(t *testing.T) {
	for range 20 {
		s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool { return m.Method != protocol.MethodToolCall }}
		e := mustStart(t, s, nil)
		if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); !errors.Is(err, sdk.ErrUnavailable) {
			t.Fatal(err)
		}
		if n := e.notices.All(); len(n) != 1 || !strings.Contains(n[0].Message, "stopped") {
			t.Fatalf("notices when the call returned: %v", n)
		}
		e.plugin.Close()
		if n := e.notices.All(); len(n) != 1 {
			t.Fatalf("notices after Close: %v", n)
		}
	}
}

// A plugin that crashes on every restart is one death: one notice when it
// goes down, one when it comes back. Each failed restart says why in the
// plugin's log and in the error of the read that tried, and backs off.
func TestCrashLoopIsOneDeath(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	var crashing atomic.Bool
	s := dieOnRequest()
	e := mustStart(t, s, func(o *Options) {
		o.Transport = mem.New(func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
			if crashing.Load() {
				return errors.New("crashed on start")
			}
			return s.main(ctx, stdin, stdout, stderr)
		}, nil)
		o.Now = clock.Now
		o.Backoff = Backoff{Initial: time.Millisecond, Max: time.Millisecond, Reset: time.Hour}
	})
	tl := e.tool("plugin__t__echo")
	crashing.Store(true)
	tl.Call(context.Background(), sdk.ToolCall{ID: "d", Input: json.RawMessage(`"die"`)}, &ui{})
	waitStatus(t, e.plugin, "dead")
	const failures = 5
	for range failures {
		clock.Advance(time.Millisecond)
		if _, err := call(t, tl, context.Background(), "c", nil); !errors.Is(err, sdk.ErrUnavailable) || !strings.Contains(err.Error(), "crashed on start") {
			t.Fatalf("a read during the crash loop = %v", err)
		}
	}
	crashing.Store(false)
	clock.Advance(time.Millisecond)
	if out, err := call(t, tl, context.Background(), "c", nil); err != nil || out.Text() != "echo {}" {
		t.Fatalf("after the crash loop: %v %v", out, err)
	}
	var msgs []string
	for _, n := range e.notices.All() {
		msgs = append(msgs, n.Message)
	}
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0], "stopped") || msgs[1] != "running again; failed restarts before this one: 5" {
		t.Fatalf("notices = %q, want one for the death and one for the return", msgs)
	}
	if n := strings.Count(e.log.String(), "restart failed"); n != failures {
		t.Fatalf("%d failed restarts in the log, want %d:\n%s", n, failures, e.log.String())
	}
}
