package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// lazy makes a plugin named "t" from a cached declaration, without
// starting it, over a transport that counts its starts.
func lazy(t *testing.T, s script, declared protocol.InitializeResult, tweak func(*Options)) (*env, *countingTransport) {
	t.Helper()
	n := testutil.NewCollector[Notice]()
	log := &testutil.SyncBuffer{}
	ct := &countingTransport{Transport: mem.New(s.main, log)}
	opts := Options{Name: "t", Root: "/plugins/t", Transport: ct, Raise: n.Add, Log: log, Declared: &declared}
	if tweak != nil {
		tweak(&opts)
	}
	p := New(opts)
	t.Cleanup(func() { p.Close() })
	return &env{t: t, plugin: p, notices: n, log: log}, ct
}

func TestDeclaredContributesWithoutStarting(t *testing.T) {
	e, ct := lazy(t, script{decl: basicDecl(), handle: func(p *peer, m msg) bool { echoAnswer(p, m); return true }}, basicDecl(), nil)
	tl := e.tool("plugin__t__echo")
	if got := e.plugin.Status(); got != "idle" || ct.count() != 0 {
		t.Fatalf("before any read: status %s, %d starts; want idle and none", got, ct.count())
	}
	out, err := call(t, tl, context.Background(), "c1", nil)
	if err != nil || len(out.Parts) == 0 || !strings.HasPrefix(out.Parts[0].Text, "echo") {
		t.Fatalf("first read: %v %+v", err, out)
	}
	if _, err := call(t, tl, context.Background(), "c2", nil); err != nil {
		t.Fatal(err)
	}
	if got := e.plugin.Status(); got != "running" || ct.count() != 1 {
		t.Fatalf("after two reads: status %s, %d starts; want running and one", got, ct.count())
	}
	if n := e.notices.All(); len(n) != 0 {
		t.Fatalf("a first start that declares what was cached says nothing, got %v", n)
	}
}

func TestLazyFirstStartFailureIsOneNotice(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	broken := script{init: func(p *peer, m msg) { p.replyErr(m, -32603, "no config file") }}
	e, ct := lazy(t, broken, basicDecl(), func(o *Options) { o.Clock = clock })
	tl := e.tool("plugin__t__echo")
	for i := range 4 {
		_, err := call(t, tl, context.Background(), "c", nil)
		if !errors.Is(err, sdk.ErrUnavailable) {
			t.Fatalf("read %d: %v, want unavailable", i, err)
		}
		clock.Advance(time.Minute) // past any backoff: every read tries
	}
	if ct.count() != 4 {
		t.Fatalf("starts = %d, want 4 (one a read, past the backoff)", ct.count())
	}
	notices := e.notices.All()
	if len(notices) != 1 || !strings.Contains(notices[0].Message, "could not start") ||
		!strings.Contains(notices[0].Message, "no config file") || notices[0].Level != "error" {
		t.Fatalf("want one notice saying why it could not start, got %v", notices)
	}
	if got := e.plugin.Status(); got != "dead" {
		t.Fatalf("status %s, want dead (the next read tries again)", got)
	}
}

func TestChangedDeclarationReplacesTheCachedOne(t *testing.T) {
	stale := basicDecl()
	stale.Tools[0].Name = "old"
	stale.Commands = []sdk.CommandSpec{{Name: "gone"}}
	now := basicDecl()
	now.Tools = append(now.Tools, sdk.ToolSpec{Name: "bad name!", Description: "x", InputSchema: json.RawMessage(`{"type":"object"}`)})
	var redeclared []protocol.InitializeResult
	var mu sync.Mutex
	handshook := testutil.NewCollector[protocol.InitializeResult]()
	e, _ := lazy(t, script{decl: now, handle: func(p *peer, m msg) bool { return false }}, stale, func(o *Options) {
		o.Redeclared = func(d protocol.InitializeResult, handshake bool) {
			mu.Lock()
			redeclared = append(redeclared, d)
			mu.Unlock()
			if handshake {
				handshook.Add(d)
			}
		}
	})
	old := e.tool("plugin__t__old")
	// The proxy of the stale declaration starts the plugin; the plugin
	// answers what it answers (here it dies: the call is not the point).
	call(t, old, context.Background(), "c", nil)
	mu.Lock()
	got := redeclared
	mu.Unlock()
	if len(got) != 1 || len(got[0].Tools) != 1 || got[0].Tools[0].Name != "echo" || len(got[0].Commands) != 0 {
		t.Fatalf("Redeclared with %+v, want once, with the kept declaration (echo only)", got)
	}
	c := e.plugin.Contributions()
	if len(c.Tools) != 1 || c.Tools[0].Spec().Name != "plugin__t__echo" || len(c.Commands) != 0 {
		t.Fatalf("contributions after the change: %+v", c)
	}
	var changed, refused int
	for _, n := range e.notices.All() {
		switch {
		case strings.Contains(n.Message, "declaration changed"):
			changed++
		case strings.Contains(n.Message, "tools[1].name"):
			refused++
		}
	}
	if changed != 1 || refused != 1 {
		t.Fatalf("want one change notice and the new declaration's refusal, got %v", e.notices.All())
	}
	// A respawn declaring the same again says nothing more.
	waitStatus(t, e.plugin, "dead")
	before := len(e.notices.All())
	call(t, e.tool("plugin__t__echo"), context.Background(), "c2", nil)
	waitStatus(t, e.plugin, "dead")
	for _, n := range e.notices.All()[before:] {
		if strings.Contains(n.Message, "declaration") || strings.Contains(n.Message, "tools[1]") {
			t.Fatalf("a respawn with the same declaration said %q", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(redeclared) != 1 {
		t.Fatalf("Redeclared %d times, want once", len(redeclared))
	}
	if h := handshook.All(); len(h) != 1 || len(h[0].Tools) != 1 || h[0].Tools[0].Name != "echo" {
		t.Fatalf("Redeclared at a handshake with %+v, want once, with the kept declaration (echo only)", h)
	}
}

func TestIdleStopIsQuietAndTheNextReadStartsIt(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			var tc protocol.ToolCallParams
			json.Unmarshal(m.Params, &tc)
			if string(tc.Input) == `"slow"` {
				close(arrived)
				go func() { <-release; echoAnswer(p, m) }()
				return true
			}
			echoAnswer(p, m)
		}
		return true
	}}
	ct := &countingTransport{Transport: mem.New(s.main, nil)}
	const idle = 30 * time.Millisecond
	clock := &fakeClock{now: time.Unix(1000, 0)}
	e := mustStart(t, s, func(o *Options) { o.Transport = ct; o.Deadlines.IdleStop = idle; o.Clock = clock })
	tl := e.tool("plugin__t__echo")

	// A call that outlasts IdleStop keeps its instance.
	done := make(chan error, 1)
	go func() {
		_, err := tl.Call(context.Background(), sdk.ToolCall{ID: "s", Input: json.RawMessage(`"slow"`)}, &ui{})
		done <- err
	}()
	<-arrived
	for range 10 { // the call is in flight for ten idle periods
		clock.Advance(idle)
	}
	if got := e.plugin.Status(); got != "running" {
		t.Fatalf("with a call in flight: status %s, want running", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitStatus(t, e.plugin, "idle")
	if _, err := call(t, tl, context.Background(), "again", nil); err != nil {
		t.Fatalf("the read after an idle stop: %v", err)
	}
	if ct.count() != 2 {
		t.Fatalf("starts = %d, want 2", ct.count())
	}
	waitStatus(t, e.plugin, "idle")
	if n := e.notices.All(); len(n) != 0 {
		t.Fatalf("an idle stop is no death: want no notices, got %v", n)
	}
	if !strings.Contains(e.log.String(), "idle for") {
		t.Fatalf("the log should say it was stopped for idleness:\n%s", e.log.String())
	}
}

func TestStartAfterIdleStopThatFailsSaysSo(t *testing.T) {
	var mu sync.Mutex
	broken := false
	s := script{decl: basicDecl(), init: func(p *peer, m msg) {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			p.replyErr(m, -32603, "broken now")
			return
		}
		p.reply(m, basicDecl())
	}, handle: func(p *peer, m msg) bool { echoAnswer(p, m); return true }}
	e := mustStart(t, s, func(o *Options) { o.Deadlines.IdleStop = 10 * time.Millisecond })
	waitStatus(t, e.plugin, "idle")
	mu.Lock()
	broken = true
	mu.Unlock()
	if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("%v, want unavailable", err)
	}
	n := e.notices.All()
	if len(n) != 1 || !strings.Contains(n[0].Message, "could not start") || !strings.Contains(n[0].Message, "broken now") {
		t.Fatalf("want one notice of the failed start, got %v", n)
	}
}

func TestObservationStartsAnAsleepPlugin(t *testing.T) {
	decl := basicDecl()
	decl.Hooks = []protocol.HookDecl{{ID: "h", Observe: []string{"tool/after"}}}
	seen := make(chan string, 1)
	e, ct := lazy(t, script{decl: decl, handle: func(p *peer, m msg) bool {
		if m.Method == protocol.NotifyHookObserve {
			seen <- string(m.Params)
		}
		return true
	}}, decl, nil)
	hooks := e.plugin.Contributions().Hooks
	if len(hooks) != 1 {
		t.Fatalf("hooks %+v", hooks)
	}
	hooks[0].Observe(context.Background(), sdk.HookEvent{Site: "tool", Point: "after", Payload: json.RawMessage(`{}`)})
	select {
	case <-seen:
	case <-time.After(testutil.WaitLimit):
		t.Fatal("the observation never reached the plugin")
	}
	if ct.count() != 1 {
		t.Fatalf("starts = %d, want 1", ct.count())
	}
}

// Waking an idle plugin is the start the host put off, not part of the
// read: a hook or tool whose deadline is shorter than the plugin's start
// still gets its answer, as it would had the plugin started with the host.
func TestWakingIsNotCountedAgainstTheReadsDeadline(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	slow := script{decl: basicDecl(), init: func(p *peer, m msg) {
		clock.Advance(200 * time.Millisecond) // a start slower than the tool's deadline
		p.reply(m, basicDecl())
	}, handle: func(p *peer, m msg) bool { echoAnswer(p, m); return true }}
	e, _ := lazy(t, slow, basicDecl(), func(o *Options) { o.Deadlines.Tool = 50 * time.Millisecond; o.Clock = clock })
	if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); err != nil {
		t.Fatalf("the first read of an idle plugin: %v", err)
	}
}

// A request past its deadline is still owed, and the wedge rule's to
// judge: the idle stop waits it out rather than stop the instance under it.
func TestIdleStopWaitsForWhatIsOwed(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool { return true }} // never answers
	const idle = 20 * time.Millisecond
	clock := &fakeClock{now: time.Unix(1000, 0)}
	e := mustStart(t, s, func(o *Options) {
		o.Clock = clock
		o.Deadlines.IdleStop = idle
		o.Deadlines.Tool = 10 * time.Millisecond
		o.Deadlines.Grace = time.Minute
	})
	if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
	for range 10 {
		clock.Advance(idle)
	}
	if got := e.plugin.Status(); got != "running" {
		t.Fatalf("owing an answer, status %s; want running", got)
	}
}
