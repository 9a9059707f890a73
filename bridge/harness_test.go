package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// msg is one JSON-RPC message as a scripted plugin sees it.
type msg struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// peer is the plugin end of a scripted in-memory plugin: it reads the
// host's messages and writes raw lines, so a test can misbehave exactly.
type peer struct {
	in  *bufio.Reader
	out io.Writer
	mu  sync.Mutex
}

func (p *peer) read() (msg, error) {
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		return msg{}, err
	}
	var m msg
	return m, json.Unmarshal(line, &m)
}

// raw writes one line; its error is the host's end having gone.
func (p *peer) raw(s string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := io.WriteString(p.out, s+"\n")
	return err
}

func (p *peer) send(v any) error {
	b, _ := json.Marshal(v)
	return p.raw(string(b))
}

func (p *peer) reply(m msg, result any) {
	p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

func (p *peer) replyErr(m msg, code int, message string) {
	p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": code, "message": message}})
}

func (p *peer) notify(method string, params any) error {
	return p.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request from the plugin to the host and waits for its answer
// (which the script's loop must hand over on answers).
func (p *peer) request(id int, method string, params any) {
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// mark sends the host a notification it does not know, which it logs as
// ignored on the wire's reader, and returns that log line. The host takes
// the plugin's lines one at a time, in wire order, so once the line is in
// the log it has taken everything the plugin wrote before it (a late
// answer, a probe's answer): a test waits for it (env.taken) before moving
// the clock past what those should have changed. Unlike a request, whose
// answer's write the host guards with a timer, it arms nothing.
func (p *peer) mark() string {
	method := fmt.Sprintf("test/mark/%d", marks.Add(1))
	p.notify(method, nil)
	return fmt.Sprintf("bridge: ignored notification %q\n", method)
}

// marks numbers the marks (peer.mark) of every test.
var marks atomic.Int64

// script is a scripted plugin: handle is called for each message after
// the handshake; returning false ends the instance (a death).
type script struct {
	decl   protocol.InitializeResult
	handle func(p *peer, m msg) bool
	init   func(p *peer, m msg) // nil: answer decl
}

func (s script) main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	p := &peer{in: bufio.NewReader(stdin), out: stdout}
	for {
		m, err := p.read()
		if err != nil {
			return nil
		}
		if m.Method == protocol.MethodInitialize {
			if s.init != nil {
				s.init(p, m)
			} else {
				p.reply(m, s.decl)
			}
			continue
		}
		if s.handle != nil && !s.handle(p, m) {
			return io.ErrUnexpectedEOF // the instance dies
		}
	}
}

// dieOnRequest echoes every tool call, except one whose input is "die":
// then the instance ends without answering.
func dieOnRequest() script {
	return script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			var tc protocol.ToolCallParams
			json.Unmarshal(m.Params, &tc)
			if string(tc.Input) == `"die"` {
				return false
			}
			echoAnswer(p, m)
		}
		return true
	}}
}

func basicDecl() protocol.InitializeResult {
	return protocol.InitializeResult{Protocol: protocol.Version, Name: "t", Version: "1",
		Tools: []sdk.ToolSpec{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
}

// countingTransport counts starts.
type countingTransport struct {
	*mem.Transport
	mu     sync.Mutex
	starts int
}

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

func (c *countingTransport) Start(ctx context.Context) (transport.Conn, error) {
	c.mu.Lock()
	c.starts++
	c.mu.Unlock()
	return c.Transport.Start(ctx)
}

// fakeClock is the bridge's clock for a test that moves time rather than
// waits for it: Advance moves Now and fires every timer it passes at once.
// Time also passes as it does (from now, set at the start): a timer
// nobody advances past still fires when its duration has really passed,
// so a test moves only the time it would otherwise sleep through (and
// gives what it moves durations no test lasts).
//
// Moving the clock before the bridge has armed the timer it is meant to
// fire proves nothing; waitArmed waits until it has.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time // the clock's time when real was read
	real    time.Time
	timers  map[*fakeTimer]bool
	changed chan struct{} // closed, and replaced, whenever a timer is armed
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *fakeClock) nowLocked() time.Time {
	if c.real.IsZero() {
		c.real = time.Now()
	}
	return c.now.Add(time.Since(c.real))
}

// Advance moves the clock d ahead and fires every timer now due; every
// AfterFunc's f it fired has run when it returns.
func (c *fakeClock) Advance(d time.Duration) { c.advance(d).Wait() }

// advance moves the clock d ahead and fires every timer now due, each
// AfterFunc's f in its own goroutine, as time.AfterFunc does (so findings
// that come due together race as they do in real time); it returns once
// all are under way, with what waits for them to end.
func (c *fakeClock) advance(d time.Duration) *sync.WaitGroup {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.nowLocked()
	var due []*fakeTimer
	for t := range c.timers {
		if !t.at.After(now) {
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	var running sync.WaitGroup
	for _, t := range due {
		gen := t.gen()
		if t.f == nil {
			t.fire(gen)
			continue
		}
		running.Go(func() { t.fire(gen) })
	}
	return &running
}

// waitArmed waits until n timers are armed that were set to fire between
// lo and hi from when they were armed, failing the test past WaitLimit.
// A test waits for the timer the bridge arms once it has taken what it
// should have (a call written, a delta seen), then moves the clock.
func (c *fakeClock) waitArmed(t *testing.T, n int, lo, hi time.Duration) {
	t.Helper()
	if got := c.whenArmed(n, lo, hi); got < n {
		t.Fatalf("%d timers armed for between %s and %s, want %d", got, lo, hi, n)
	}
}

// whenArmed is waitArmed for a goroutine other than the test's: it
// returns how many such timers are armed, fewer than n past WaitLimit.
func (c *fakeClock) whenArmed(n int, lo, hi time.Duration) int {
	limit := time.NewTimer(testutil.WaitLimit)
	defer limit.Stop()
	for {
		c.mu.Lock()
		got := 0
		for tm := range c.timers {
			if tm.d >= lo && tm.d <= hi {
				got++
			}
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		if got >= n {
			return got
		}
		select {
		case <-changed:
		case <-limit.C:
			return got
		}
	}
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &fakeTimer{c: c, f: f}
	t.Reset(d)
	return t
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// fakeTimer fires once per arming, whichever comes first: the clock
// advanced past it, or its duration really passed.
type fakeTimer struct {
	c     *fakeClock
	f     func()
	ch    chan time.Time
	at    time.Time
	d     time.Duration // what it was last armed for
	armed int           // bumped by each Reset and Stop: a stale firing is dropped
	real  *time.Timer
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) gen() int {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.armed
}

// fire runs an AfterFunc timer's f on the goroutine that fired it, or
// sends on a NewTimer's C.
func (t *fakeTimer) fire(gen int) {
	t.c.mu.Lock()
	if gen != t.armed || !t.c.timers[t] {
		t.c.mu.Unlock()
		return
	}
	delete(t.c.timers, t)
	now := t.c.nowLocked()
	t.c.mu.Unlock()
	if t.f != nil {
		t.f()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.timers[t]
	delete(t.c.timers, t)
	t.armed++
	if t.real != nil {
		t.real.Stop()
	}
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.c.timers[t]
	if t.c.timers == nil {
		t.c.timers = map[*fakeTimer]bool{}
	}
	t.c.timers[t] = true
	t.armed++
	gen := t.armed
	t.at, t.d = t.c.nowLocked().Add(d), d
	if t.real != nil {
		t.real.Stop()
	}
	t.real = time.AfterFunc(d, func() { t.fire(gen) })
	if t.c.changed != nil {
		close(t.c.changed)
		t.c.changed = nil
	}
	t.c.mu.Unlock()
	return was
}

type env struct {
	t       *testing.T
	plugin  *Plugin
	notices *testutil.Collector[Notice]
	log     *testutil.SyncBuffer
}

// start starts a scripted plugin named "t" over the in-memory transport.
func start(t *testing.T, s script, tweak func(*Options)) (*env, error) {
	t.Helper()
	n := testutil.NewCollector[Notice]()
	log := &testutil.SyncBuffer{}
	opts := Options{Name: "t", Root: "/plugins/t", Transport: mem.New(s.main, log), Raise: n.Add, Log: log}
	if tweak != nil {
		tweak(&opts)
	}
	p := New(opts)
	t.Cleanup(func() { p.Close() })
	_, err := p.Start(context.Background())
	return &env{t: t, plugin: p, notices: n, log: log}, err
}

func mustStart(t *testing.T, s script, tweak func(*Options)) *env {
	t.Helper()
	e, err := start(t, s, tweak)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// taken waits until the host has taken mark (peer.mark) and all before it.
func (e *env) taken(mark string) {
	e.t.Helper()
	e.log.WaitFor(e.t, mark)
}

func (e *env) tool(name string) sdk.Tool {
	for _, tl := range e.plugin.Contributions().Tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	e.t.Fatalf("no tool %s", name)
	return nil
}

// ui records progress and answers questions.
type ui struct {
	mu       sync.Mutex
	progress []string
	answer   string
}

func (u *ui) Progress(s string) {
	u.mu.Lock()
	u.progress = append(u.progress, s)
	u.mu.Unlock()
}

func (u *ui) Ask(ctx context.Context, q string) (string, error) { return u.answer + ":" + q, nil }

func echoAnswer(p *peer, m msg) {
	var tc protocol.ToolCallParams
	json.Unmarshal(m.Params, &tc)
	p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("echo " + string(tc.Input))}}})
}

func call(t *testing.T, tl sdk.Tool, ctx context.Context, id string, u sdk.CallUI) (sdk.ToolOutput, error) {
	t.Helper()
	if u == nil {
		u = &ui{}
	}
	return tl.Call(ctx, sdk.ToolCall{ID: id, Name: tl.Spec().Name, Input: json.RawMessage(`{}`), Cwd: "/"}, u)
}
