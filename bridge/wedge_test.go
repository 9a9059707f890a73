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
	const deadline, grace = time.Hour, time.Hour
	const step = deadline / 3 // between two calls
	clock := &fakeClock{now: time.Unix(1000, 0)}
	seen := make(chan struct{})
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = mem.New(firstInstanceSilent(seen), nil)
		o.Clock = clock
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
	})
	tl := e.tool("plugin__t__echo")
	var wg sync.WaitGroup
	defer wg.Wait()
	defer e.plugin.Close() // ends the calls still waiting, if the test fails
	for i := 0; ; i++ {
		wedged := len(e.notices.All()) > 0
		if !wedged && time.Duration(i)*step > deadline+grace+step {
			t.Fatalf("not wedged %s into steady traffic", time.Duration(i)*step)
		}
		answered := make(chan error, 1)
		wg.Go(func() {
			out, err := call(t, tl, context.Background(), fmt.Sprint("c", i), nil)
			if err == nil && out.Text() != "echo {}" {
				err = fmt.Errorf("answered %q", out.Text())
			}
			answered <- err
		})
		select {
		case <-seen: // written, so its deadline is counted in
		case <-time.After(testutil.WaitLimit):
			t.Fatalf("call %d never reached the plugin", i)
		}
		if wedged {
			if err := <-answered; err != nil {
				t.Fatalf("the call after the wedge: %v", err)
			}
			if n := e.notices.All(); len(n) != 1 || !strings.Contains(n[0].Message, "stopping the wedged instance") {
				t.Fatalf("notices = %v, want the wedge's one", n)
			}
			return
		}
		clock.Advance(step)
	}
}

// A call past its deadline is cancelled on the wire as an interrupted one
// is (tool/cancel), and its answer is still awaited: one that comes after
// the cancel, within Grace, shows the instance alive.
func TestDeadlineSendsTheCancel(t *testing.T) {
	const deadline, grace = time.Hour, 2 * time.Hour
	clock := &fakeClock{now: time.Unix(1000, 0)}
	arrived, cancelled := make(chan struct{}, 1), make(chan string, 1)
	var running msg // the call, answered only once cancelled
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodToolCall:
			running = m
			arrived <- struct{}{}
		case protocol.NotifyToolCancel:
			p.reply(running, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("cancelled")}}})
			cancelled <- p.mark()
		}
		return true
	}}
	e := mustStart(t, s, func(o *Options) {
		o.Clock = clock
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
		o.Deadlines.IdleStop = 100 * grace // not what is tested
	})
	done := make(chan error, 1)
	go func() {
		_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
		done <- err
	}()
	<-arrived // written, so its deadline is armed
	clock.Advance(deadline)
	var de *DeadlineError
	if err := <-done; !errors.As(err, &de) {
		t.Fatalf("call = %v, want its deadline error", err)
	}
	cancelHeardAndAlive(t, e, clock, cancelled, grace, "tool/cancel")
}

// A provider stream past its deadline is cancelled as an interrupted one
// is: the plugin hears provider/cancel, and the stream's end, if it comes,
// is still taken.
func TestStreamDeadlineSendsTheCancel(t *testing.T) {
	const deadline, grace = time.Hour, 2 * time.Hour
	clock := &fakeClock{now: time.Unix(1000, 0)}
	arrived, cancelled := make(chan struct{}, 1), make(chan string, 1)
	var running msg // the stream, ended only once cancelled
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodProviderStream:
			running = m
			arrived <- struct{}{}
		case protocol.NotifyProviderCancel:
			p.reply(running, protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "cancelled"}})
			cancelled <- p.mark()
		}
		return true
	}}
	s.decl.Providers = []protocol.ProviderDecl{{ID: "p"}}
	e := mustStart(t, s, func(o *Options) {
		o.Clock = clock
		o.Deadlines.Provider = deadline
		o.Deadlines.ProviderTotal = 10 * grace
		o.Deadlines.Grace = grace
		o.Deadlines.IdleStop = 100 * grace // not what is tested
	})
	done := make(chan error, 1)
	go func() {
		_, err := e.plugin.Contributions().Providers[0].Stream(context.Background(), sdk.ProviderRequest{}, func(sdk.StreamEvent) {})
		done <- err
	}()
	<-arrived
	clock.waitArmed(t, 1, deadline, deadline) // the stream's own deadline (waitStream)
	clock.Advance(deadline)
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stream = %v, want its deadline error", err)
	}
	cancelHeardAndAlive(t, e, clock, cancelled, grace, "provider/cancel")
}

// cancelHeardAndAlive checks that the plugin heard what (its cancel) with
// the clock still at the deadline it missed, and that, once the host has
// taken its answer (the mark the plugin sent after it), it is still running
// without a notice two graces later.
func cancelHeardAndAlive(t *testing.T, e *env, clock *fakeClock, cancelled <-chan string, grace time.Duration, what string) {
	t.Helper()
	select {
	case mark := <-cancelled:
		e.taken(mark)
	case <-time.After(testutil.WaitLimit):
		t.Fatalf("no %s after a missed deadline", what)
	}
	clock.Advance(2 * grace)
	if n := e.notices.All(); len(n) != 0 || e.plugin.Status() != "running" {
		t.Fatalf("a plugin that answered after %s: %s, notices %v", what, e.plugin.Status(), n)
	}
}

// With a liveness probe (a translator's, Options.Probe), a call answered
// only past its deadline shows nothing (the translator gave that answer
// itself): the probe, sent as the deadline passes, must be answered within
// Grace, or the instance is wedged.
func TestProbe(t *testing.T) {
	const deadline, grace = time.Hour, 2 * time.Hour
	for _, c := range []struct {
		name   string
		answer bool // the probe
	}{{"answered", true}, {"unanswered", false}} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1000, 0)}
			arrived, probes := make(chan struct{}, 1), make(chan struct{}, 8)
			late, taken := make(chan struct{}), make(chan string, 1)
			s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
				switch m.Method {
				case protocol.MethodToolCall:
					// As a translator whose server is silent: an answer
					// of its own once the call's deadline has passed.
					go func() {
						<-late
						p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("cancelled")}}})
						taken <- p.mark()
					}()
					arrived <- struct{}{}
				case "probe":
					if c.answer {
						p.reply(m, struct{}{})
					}
					probes <- struct{}{}
				}
				return true
			}}
			e := mustStart(t, s, func(o *Options) {
				o.Clock = clock
				o.Deadlines.Tool = deadline
				o.Deadlines.Grace = grace
				o.Deadlines.IdleStop = 100 * grace // not what is tested
				o.Probe = "probe"
			})
			done := make(chan error, 1)
			go func() {
				_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
				done <- err
			}()
			<-arrived
			clock.Advance(deadline)
			if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call = %v, want its deadline error", err)
			}
			select {
			case <-probes:
			case <-time.After(testutil.WaitLimit):
				t.Fatal("no probe past the deadline")
			}
			// The call's own answer, half a Grace late: it puts off nothing.
			clock.Advance(grace / 2)
			close(late)
			e.taken(<-taken)
			clock.Advance(grace / 2)
			if !c.answer {
				if n := e.notices.Next(t); !strings.Contains(n.Message, "tool/call unanswered past its deadline, and nothing answered for 2h0m0s; stopping the wedged instance") {
					t.Fatalf("notice = %v", n)
				}
				return
			}
			clock.Advance(3 * grace)
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
	const provider, grace, idle = time.Hour, time.Hour, 100 * time.Hour
	clock := &fakeClock{now: time.Unix(1000, 0)}
	end := make(chan struct{})
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodProviderStream {
			var ps protocol.ProviderStreamParams
			json.Unmarshal(m.Params, &ps)
			go func() {
				p.notify(protocol.NotifyProviderDelta, protocol.ProviderDelta{StreamID: ps.StreamID, Event: sdk.StreamEvent{Kind: sdk.EventText, Text: "thinking"}})
				<-end // past the first deadline and Grace, within ProviderIdle
				p.reply(m, protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "end_turn"}})
			}()
		}
		return true
	}}
	s.decl.Providers = []protocol.ProviderDecl{{ID: "p"}}
	e := mustStart(t, s, func(o *Options) {
		o.Clock = clock
		o.Deadlines.Provider = provider
		o.Deadlines.ProviderIdle = idle
		o.Deadlines.ProviderTotal = 2 * idle
		o.Deadlines.Grace = grace
	})
	type result struct {
		end  sdk.StreamEnd
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var text strings.Builder
		end, err := e.plugin.Contributions().Providers[0].Stream(context.Background(), sdk.ProviderRequest{}, func(ev sdk.StreamEvent) { text.WriteString(ev.Text) })
		done <- result{end, text.String(), err}
	}()
	clock.waitArmed(t, 1, idle, idle) // the delta has given the stream ProviderIdle
	clock.Advance(2 * (provider + grace))
	close(end)
	if r := <-done; r.err != nil || r.end.StopReason != "end_turn" || r.text != "thinking" {
		t.Fatalf("stream = %+v %q, %v", r.end, r.text, r.err)
	}
	if n := e.notices.All(); len(n) != 0 {
		t.Fatalf("notices = %v", n)
	}
}

// However many requests find an instance wedged, it dies once: one notice.
func TestOneNoticePerWedgedInstance(t *testing.T) {
	const deadline, grace = time.Hour, time.Hour
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<16) + `"`)
	const calls = 50
	read := make(chan struct{}, calls) // the tool calls an answering plugin has read
	for _, c := range []struct {
		name  string
		main  mem.Main
		input json.RawMessage
		reads bool // the plugin reads every call (on read)
	}{
		{"unanswered", script{decl: basicDecl(), handle: func(_ *peer, m msg) bool {
			if m.Method == protocol.MethodToolCall {
				read <- struct{}{}
			}
			return true
		}}.main, json.RawMessage(`{}`), true},
		{"not reading", deaf, big, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1000, 0)}
			e := mustStart(t, script{}, func(o *Options) {
				// A call that finds the instance already dead fails at once,
				// rather than reaching (and wedging) a new one.
				o.Transport = &startOnce{Transport: mem.New(c.main, nil)}
				o.Clock = clock
				o.Deadlines.Tool = deadline
				o.Deadlines.Grace = grace
				// A slow sink (a busy terminal) holds the first notice for
				// Grace: every other request's verdict comes due meanwhile,
				// each on its own goroutine, as the timers' are.
				notify, first := o.Raise, sync.Once{}
				o.Raise = func(n Notice) {
					first.Do(func() { clock.advance(grace) })
					notify(n)
				}
			})
			tl := e.tool("plugin__t__echo")
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() {
					tl.Call(context.Background(), sdk.ToolCall{ID: fmt.Sprint("c", i), Input: c.input}, &ui{})
				})
			}
			clock.waitArmed(t, calls, deadline/2, deadline) // every call's deadline, each armed as its write begins
			if c.reads {                                    // every call is written
				for range calls {
					<-read
				}
			}
			clock.Advance(deadline)
			if c.reads {
				wg.Wait() // every call has heard its deadline, and sent its cancel
			}
			clock.Advance(grace)
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
// and whose later ones echo every tool call. Every tool call it reads is
// sent on seen, if not nil.
func firstInstanceSilent(seen chan<- struct{}) mem.Main {
	var starts atomic.Int32
	return func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
		first := starts.Add(1) == 1
		return script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
			if m.Method != protocol.MethodToolCall {
				return true
			}
			if seen != nil {
				seen <- struct{}{}
			}
			if !first {
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
	const deadline, grace = time.Hour, time.Hour
	clock := &fakeClock{now: time.Unix(1000, 0)}
	seen := make(chan struct{}, 2)
	tr := &slowKill{Transport: mem.New(firstInstanceSilent(seen), nil), release: make(chan struct{})}
	defer close(tr.release)
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = tr
		o.Clock = clock
		o.Deadlines.Tool = deadline
		o.Deadlines.Grace = grace
	})
	tl := e.tool("plugin__t__echo")
	first := make(chan error, 1)
	go func() {
		_, err := call(t, tl, context.Background(), "first", nil)
		first <- err
	}()
	<-seen
	// Not Advance: the wedge finding's kill, which it waits for, takes
	// until the test ends.
	clock.advance(deadline + grace)
	if err := <-first; err == nil {
		t.Fatal("the first instance answered")
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "stopping the wedged instance") {
		t.Fatalf("notice %v, want the wedge's", n)
	}
	after := make(chan string, 1)
	go func() {
		out, err := call(t, tl, context.Background(), "after", nil)
		after <- fmt.Sprint(out.Text(), err)
	}()
	select {
	case got := <-after:
		if got != "echo {}<nil>" {
			t.Fatalf("a call while the wedged instance is being killed: %s; want a fresh instance's answer", got)
		}
	case <-time.After(testutil.WaitLimit):
		t.Fatal("a call while the wedged instance is being killed waited for the kill")
	}
}
