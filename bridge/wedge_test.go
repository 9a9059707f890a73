package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
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
		// The call is also owed past its deadline, which wedges the
		// instance Grace later; the blocked write speaks first, by Grace
		// even when this test's goroutines are slow to run.
		o.Deadlines.Tool = 400 * time.Millisecond
		o.Deadlines.Grace = 400 * time.Millisecond
	})
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`) // past any pipe buffer
	start := time.Now()
	_, err := e.tool("plugin__t__echo").Call(context.Background(), sdk.ToolCall{ID: "c", Input: big}, &ui{})
	if !errors.Is(err, sdk.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "not reading its input: sending tool/call blocked for 400ms") {
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
		o.Clock = clock
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

// A contributor past its deadline is dropped from its round; a tool call
// on the same instance, still within its own deadline, does not protect
// an instance that has answered nothing since the contributor's deadline:
// Grace after it, the instance is wedged, and the tool call fails with it.
// (A call within its deadline once protected the instance, and a plugin
// spinning in one call while newer ones kept coming was never stopped.)
func TestNewerCallDoesNotProtectAnOverdueOne(t *testing.T) {
	const grace = 200 * time.Millisecond
	toolSeen := make(chan struct{})
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			close(toolSeen)
		}
		return true // nothing is answered
	}}
	e, _ := startOwing(t, s, grace, func(*Options) {})
	answered := make(chan error, 1)
	go func() {
		_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
		answered <- err
	}()
	<-toolSeen // the tool call is in flight before the contributor is asked
	asked := time.Now()
	_, err := e.plugin.Contributions().Contributors[0].Contribute(context.Background(), sdk.Query{Prompt: "hi"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("contributor = %v, want its deadline error", err)
	}
	n := e.notices.Next(t)
	if !strings.Contains(n.Message, "context/contribute unanswered past its deadline, and nothing answered for 200ms; stopping the wedged instance") {
		t.Fatalf("notice = %v", n)
	}
	if took := time.Since(asked); took > 50*time.Millisecond+grace+2*time.Second {
		t.Fatalf("wedged %s after the contributor was asked, want its deadline and Grace", took)
	}
	if err := <-answered; !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("the tool call on the wedged instance = %v, want it unavailable", err)
	}
}

// A plugin that answers nothing, under steady traffic: each new call is
// within its deadline when the oldest passes its own, and Grace after that
// the instance is wedged all the same, with one notice; the calls that
// follow reach a fresh instance, and are answered.
func TestWedgedUnderTraffic(t *testing.T) {
	const deadline, grace = 300 * time.Millisecond, 300 * time.Millisecond
	main := firstInstanceSilent()
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = mem.New(main, nil)
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
	})
	tl := e.tool("plugin__t__echo")
	began := time.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	answered := make(chan time.Time, 1)
	for i := 0; ; i++ {
		if time.Since(began) > deadline+grace+5*time.Second {
			t.Fatalf("no call answered %s into steady traffic; notices %v", time.Since(began), e.notices.All())
		}
		select {
		case at := <-answered:
			if took := at.Sub(began); took > deadline+grace+2*time.Second {
				t.Fatalf("a call was answered again only %s after the first call, want within its deadline, Grace and 2s", took)
			}
			if n := e.notices.All(); len(n) != 1 || !strings.Contains(n[0].Message, "stopping the wedged instance") {
				t.Fatalf("notices = %v, want the wedge's one", n)
			}
			return
		default:
		}
		wg.Go(func() {
			if out, err := call(t, tl, context.Background(), fmt.Sprint("c", i), nil); err == nil && out.Text() == "echo {}" {
				select {
				case answered <- time.Now():
				default:
				}
			}
		})
		<-time.After(deadline / 3)
	}
}

// A call past its deadline is cancelled on the wire as an interrupted one
// is (tool/cancel), and its answer is still awaited: one that comes after
// the cancel, within Grace, shows the instance alive.
func TestDeadlineSendsTheCancel(t *testing.T) {
	const deadline, grace = 200 * time.Millisecond, 500 * time.Millisecond
	cancelled := make(chan time.Time, 1)
	var running msg // the call, answered only once cancelled
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodToolCall:
			running = m
		case protocol.NotifyToolCancel:
			cancelled <- time.Now()
			p.reply(running, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("cancelled")}}})
		}
		return true
	}}
	e := mustStart(t, s, func(o *Options) {
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
	})
	_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	missed := time.Now()
	var de *DeadlineError
	if !errors.As(err, &de) {
		t.Fatalf("call = %v, want its deadline error", err)
	}
	cancelHeardAndAlive(t, e, cancelled, missed, grace, "tool/cancel")
}

// A provider stream past its deadline is cancelled as an interrupted one
// is: the plugin hears provider/cancel, and the stream's end, if it comes,
// is still taken.
func TestStreamDeadlineSendsTheCancel(t *testing.T) {
	const deadline, grace = 200 * time.Millisecond, 500 * time.Millisecond
	cancelled := make(chan time.Time, 1)
	var running msg // the stream, ended only once cancelled
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodProviderStream:
			running = m
		case protocol.NotifyProviderCancel:
			cancelled <- time.Now()
			p.reply(running, protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "cancelled"}})
		}
		return true
	}}
	s.decl.Providers = []protocol.ProviderDecl{{ID: "p"}}
	e := mustStart(t, s, func(o *Options) {
		o.Deadlines.Provider = deadline
		o.Deadlines.Grace = grace
	})
	_, err := e.plugin.Contributions().Providers[0].Stream(context.Background(), sdk.ProviderRequest{}, func(sdk.StreamEvent) {})
	missed := time.Now()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stream = %v, want its deadline error", err)
	}
	cancelHeardAndAlive(t, e, cancelled, missed, grace, "provider/cancel")
}

// cancelHeardAndAlive checks that the plugin heard what (its cancel)
// within a second of the deadline missed at missed, and that, having
// answered it, it is still running without a notice two graces later.
func cancelHeardAndAlive(t *testing.T, e *env, cancelled <-chan time.Time, missed time.Time, grace time.Duration, what string) {
	t.Helper()
	select {
	case at := <-cancelled:
		if late := at.Sub(missed); late > time.Second {
			t.Fatalf("%s came %s after the missed deadline", what, late)
		}
	case <-time.After(testutil.WaitLimit):
		t.Fatalf("no %s after a missed deadline", what)
	}
	<-time.After(2 * grace)
	if n := e.notices.All(); len(n) != 0 || e.plugin.Status() != "running" {
		t.Fatalf("a plugin that answered after %s: %s, notices %v", what, e.plugin.Status(), n)
	}
}

// With a liveness probe (a translator's, Options.Probe), a call answered
// only past its deadline shows nothing (the translator gave that answer
// itself): the probe, sent as the deadline passes, must be answered within
// Grace, or the instance is wedged.
func TestProbe(t *testing.T) {
	const deadline, grace = 200 * time.Millisecond, 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		answer bool // the probe
	}{{"answered", true}, {"unanswered", false}} {
		t.Run(c.name, func(t *testing.T) {
			probes := make(chan struct{}, 8)
			s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
				switch m.Method {
				case protocol.MethodToolCall:
					// As a translator whose server is silent: an answer
					// of its own once the call's deadline has passed.
					go func() {
						<-time.After(deadline + 20*time.Millisecond)
						p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("cancelled")}}})
					}()
				case "probe":
					probes <- struct{}{}
					if c.answer {
						p.reply(m, struct{}{})
					}
				}
				return true
			}}
			e := mustStart(t, s, func(o *Options) {
				o.Deadlines.Tool = deadline
				o.Deadlines.Grace = grace
				o.Probe = "probe"
			})
			if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call = %v, want its deadline error", err)
			}
			select {
			case <-probes:
			case <-time.After(testutil.WaitLimit):
				t.Fatal("no probe past the deadline")
			}
			if !c.answer {
				if n := e.notices.Next(t); !strings.Contains(n.Message, "tool/call unanswered past its deadline, and nothing answered for 300ms; stopping the wedged instance") {
					t.Fatalf("notice = %v", n)
				}
				return
			}
			<-time.After(3 * grace)
			if n := e.notices.All(); len(n) != 0 || e.plugin.Status() != "running" {
				t.Fatalf("a plugin that answered its probe: %s, notices %v", e.plugin.Status(), n)
			}
		})
	}
}

// startOwing starts s, declaring a contributor it is to leave unanswered,
// with a contributor deadline of 50ms, tool calls bounded only by
// WaitLimit, and grace; tweak sets the rest. The transport counts starts.
func startOwing(t *testing.T, s script, grace time.Duration, tweak func(*Options)) (*env, *countingTransport) {
	t.Helper()
	s.decl.Contributors = []protocol.ContributorDecl{{ID: "owing"}}
	ct := &countingTransport{Transport: mem.New(s.main, nil)}
	e := mustStart(t, s, func(o *Options) {
		o.Transport = ct
		o.Deadlines.Contributor = 50 * time.Millisecond
		o.Deadlines.Tool = testutil.WaitLimit
		o.Deadlines.Grace = grace
		tweak(o)
	})
	return e, ct
}

// A provider stream that keeps talking is within its deadline: each delta
// gives it ProviderIdle more, for the wedge rule too.
func TestTalkingStreamIsNotWedged(t *testing.T) {
	// The first delta has to beat the provider deadline on a loaded machine.
	const provider, grace = 500 * time.Millisecond, 100 * time.Millisecond
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodProviderStream {
			var ps protocol.ProviderStreamParams
			json.Unmarshal(m.Params, &ps)
			go func() {
				p.notify(protocol.NotifyProviderDelta, protocol.ProviderDelta{StreamID: ps.StreamID, Event: sdk.StreamEvent{Kind: sdk.EventText, Text: "thinking"}})
				<-time.After(2 * (provider + grace)) // past the first deadline and Grace, within ProviderIdle
				p.reply(m, protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "end_turn"}})
			}()
		}
		return true
	}}
	s.decl.Providers = []protocol.ProviderDecl{{ID: "p"}}
	e := mustStart(t, s, func(o *Options) {
		o.Deadlines.Provider = provider
		o.Deadlines.ProviderIdle = testutil.WaitLimit
		o.Deadlines.Grace = grace
	})
	var text strings.Builder
	end, err := e.plugin.Contributions().Providers[0].Stream(context.Background(), sdk.ProviderRequest{}, func(ev sdk.StreamEvent) { text.WriteString(ev.Text) })
	if err != nil || end.StopReason != "end_turn" || text.String() != "thinking" {
		t.Fatalf("stream = %+v %q, %v", end, text.String(), err)
	}
	if n := e.notices.All(); len(n) != 0 {
		t.Fatalf("notices = %v", n)
	}
}

// However many requests find an instance wedged, it dies once: one notice.
func TestOneNoticePerWedgedInstance(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<16) + `"`)
	for _, c := range []struct {
		name  string
		main  mem.Main
		input json.RawMessage
	}{
		{"unanswered", script{decl: basicDecl(), handle: func(*peer, msg) bool { return true }}.main, json.RawMessage(`{}`)},
		{"not reading", deaf, big},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := mustStart(t, script{}, func(o *Options) {
				// A call that finds the instance already dead fails at once,
				// rather than reaching (and wedging) a new one.
				o.Transport = &startOnce{Transport: mem.New(c.main, nil)}
				o.Deadlines.Tool = 100 * time.Millisecond
				o.Deadlines.Grace = 100 * time.Millisecond
				// A slow sink (a busy terminal) holds the first notice for
				// Grace: every other request's verdict comes due meanwhile.
				notify, first := o.Raise, sync.Once{}
				o.Raise = func(n Notice) {
					first.Do(func() { <-time.After(o.Deadlines.Grace) })
					notify(n)
				}
			})
			tl := e.tool("plugin__t__echo")
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					tl.Call(context.Background(), sdk.ToolCall{ID: fmt.Sprint("c", i), Input: c.input}, &ui{})
				})
			}
			wg.Wait()
			if n := e.notices.Next(t); !strings.Contains(n.Message, "wedged") {
				t.Fatalf("notice = %v", n)
			}
			waitStatus(t, e.plugin, "dead")
			e.plugin.Close() // every verdict is in
			if n := e.notices.All(); len(n) != 1 {
				t.Fatalf("%d notices for one wedged instance: %v", len(n), n)
			}
		})
	}
}

// startOnce starts one instance; every later start fails.
type startOnce struct {
	transport.Transport
	started atomic.Bool
}

func (s *startOnce) Start(ctx context.Context) (transport.Conn, error) {
	if s.started.Swap(true) {
		return nil, errors.New("no second start")
	}
	return s.Transport.Start(ctx)
}

// A short deadline bounds how long an answer may take, not how soon a
// healthy plugin reads: a write may block Grace before the plugin counts
// as not reading its input.
func TestShortDeadlineIsNoReadingBound(t *testing.T) {
	writing := make(chan struct{}, 1)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := echoScript()
	s.init = func(p *peer, m msg) {
		p.reply(m, basicDecl())
		<-writing                            // the host is sending the tool call ...
		clock.Advance(50 * time.Millisecond) // ... and the plugin is busy for a while, past the deadline
	}
	ct := &countingTransport{Transport: mem.New(s.main, nil)}
	e := mustStart(t, s, func(o *Options) {
		o.Transport = writeTap{ct, writing}
		o.Deadlines.Tool = time.Millisecond // Grace stays its default
		o.Clock = clock
	})
	_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
	var de *DeadlineError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want the call's deadline error and nothing worse", err)
	}
	if n := e.notices.All(); len(n) != 0 || e.plugin.Status() != "running" || ct.count() != 1 {
		t.Fatalf("a plugin that reads its input is not wedged: %s, notices %v", e.plugin.Status(), n)
	}
}

// writeTap signals writing as the host starts writing a tool call.
type writeTap struct {
	transport.Transport
	writing chan<- struct{}
}

func (w writeTap) Start(ctx context.Context) (transport.Conn, error) {
	c, err := w.Transport.Start(ctx)
	if err != nil {
		return nil, err
	}
	return tapConn{c, w.writing}, nil
}

type tapConn struct {
	transport.Conn
	writing chan<- struct{}
}

// Write sees one whole message: the line stream writes each in one Write.
func (c tapConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"method":"`+protocol.MethodToolCall+`"`)) {
		select {
		case c.writing <- struct{}{}:
		default:
		}
	}
	return c.Conn.Write(p)
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
		o.Clock = clock
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

// A plugin that drops one request and answers the rest: the dropped one's
// caller hears its deadline, once; its route is gone with it; and it stays
// owed. While the plugin goes on answering (within Grace of each answer),
// that is the wedge rule's protection of a live instance, not a wedge. Once
// it falls quiet, Grace after its last answer it is wedged, with one notice
// naming the dropped request. The idle stop, due sooner here, does not
// stop it quietly first: what is owed is the wedge rule's to judge.
func TestDroppedRequestIsOwedUntilThePluginFallsQuiet(t *testing.T) {
	const grace = 2 * time.Second
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			echoAnswer(p, m)
		}
		return true // context/contribute is dropped
	}}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	e, ct := startOwing(t, s, grace, func(o *Options) { o.Deadlines.IdleStop = 300 * time.Millisecond; o.Clock = clock })
	_, err := e.plugin.Contributions().Contributors[0].Contribute(context.Background(), sdk.Query{Prompt: "hi"})
	var de *DeadlineError
	if !errors.As(err, &de) || de.Method != protocol.MethodContextContribute {
		t.Fatalf("contributor = %v, want its deadline error", err)
	}
	e.plugin.mu.Lock()
	inst := e.plugin.sup.inst
	e.plugin.mu.Unlock()
	inst.inFlight.mu.Lock()
	routes, owed := len(inst.inFlight.byKey), len(inst.inFlight.byID)
	inst.inFlight.mu.Unlock()
	if routes != 0 || owed != 1 {
		t.Fatalf("after the dropped request's deadline: %d routes, %d owed; want 0 routes and 1 owed", routes, owed)
	}

	// Busy well past the dropped request's deadline and Grace (a call
	// every 100ms of the clock, for Grace and a half): alive.
	for i := range int((grace + grace/2) / (100 * time.Millisecond)) {
		if out, err := call(t, e.tool("plugin__t__echo"), context.Background(), fmt.Sprint("c", i), nil); err != nil || out.Text() != "echo {}" {
			t.Fatalf("call %d while owing the dropped request: %v, %v", i, out, err)
		}
		clock.Advance(100 * time.Millisecond)
	}
	if got := e.notices.All(); len(got) != 0 || ct.count() != 1 || e.plugin.Status() != "running" {
		t.Fatalf("answering, it was stopped: %s, %d starts, notices %v", e.plugin.Status(), ct.count(), got)
	}

	// Quiet: Grace later, wedged, not idle.
	clock.Advance(grace)
	n := e.notices.Next(t)
	if !strings.Contains(n.Message, "context/contribute unanswered past its deadline, and nothing answered for 2s; stopping the wedged instance") {
		t.Fatalf("notice = %v", n)
	}
	waitStatus(t, e.plugin, "dead")
	if got := e.notices.All(); len(got) != 1 {
		t.Fatalf("notices %v, want the wedge's one", got)
	}
}

// firstInstanceSilent is a plugin whose first instance answers nothing
// and whose later ones echo every tool call.
func firstInstanceSilent() mem.Main {
	var starts atomic.Int32
	return func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
		first := starts.Add(1) == 1
		return script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
			if m.Method == protocol.MethodToolCall && !first {
				echoAnswer(p, m)
			}
			return true
		}}.main(ctx, stdin, stdout, stderr)
	}
}

// slowKill is a transport whose first instance's Kill takes until release
// is closed, as ending a remote session does when the server is the one
// not answering.
type slowKill struct {
	transport.Transport
	release chan struct{}
	starts  atomic.Int32
}

func (s *slowKill) Start(ctx context.Context) (transport.Conn, error) {
	c, err := s.Transport.Start(ctx)
	if err != nil || s.starts.Add(1) > 1 {
		return c, err
	}
	return slowKillConn{c, s.release}, nil
}

type slowKillConn struct {
	transport.Conn
	release chan struct{}
}

func (c slowKillConn) Kill() error {
	<-c.release
	return c.Conn.Kill()
}

// An instance found wedged is no longer handed out while it is being
// killed: a call that comes meanwhile starts a fresh instance and is
// answered, however long the kill takes.
func TestAWedgedInstanceIsNotUsedWhileItIsKilled(t *testing.T) {
	// The deadline also bounds the second call's wait for the fresh
	// instance's start, which a loaded machine can make slow.
	const deadline, grace = 2 * time.Second, 200 * time.Millisecond
	main := firstInstanceSilent()
	tr := &slowKill{Transport: mem.New(main, nil), release: make(chan struct{})}
	defer close(tr.release)
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = tr
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
	})
	tl := e.tool("plugin__t__echo")
	if _, err := call(t, tl, context.Background(), "first", nil); err == nil {
		t.Fatal("the first instance answered")
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "stopping the wedged instance") {
		t.Fatalf("notice %v, want the wedge's", n)
	}
	out, err := call(t, tl, context.Background(), "after", nil)
	if err != nil || out.Text() != "echo {}" {
		t.Fatalf("a call while the wedged instance is being killed: %v %v; want a fresh instance's answer", out, err)
	}
}
