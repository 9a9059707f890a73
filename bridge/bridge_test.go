package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func echoScript() script {
	return script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			echoAnswer(p, m)
		}
		return true
	}}
}

func TestHandshakeSendsInitializeParams(t *testing.T) {
	got := make(chan protocol.InitializeParams, 1)
	s := echoScript()
	s.init = func(p *peer, m msg) {
		var ip protocol.InitializeParams
		json.Unmarshal(m.Params, &ip)
		got <- ip
		p.reply(m, basicDecl())
	}
	mustStart(t, s, func(o *Options) {
		o.Config = json.RawMessage(`{"k":1}`)
		o.Env = map[string]string{"A": "b"}
	})
	ip := <-got
	if ip.Protocol != 5 || ip.PluginRoot != "/plugins/t" || string(ip.Config) != `{"k":1}` || ip.Env["A"] != "b" {
		t.Fatalf("initialize params = %+v", ip)
	}
}

func TestProtocolMismatchIsRefused(t *testing.T) {
	s := script{decl: basicDecl()}
	s.decl.Protocol = 4
	e, err := start(t, s, nil)
	if err == nil || !strings.Contains(err.Error(), "speaks protocol 4; this host speaks protocol 5") {
		t.Fatalf("err = %v", err)
	}
	if len(e.plugin.Contributions().Tools) != 0 {
		t.Fatal("a refused plugin contributes nothing")
	}
	if n := e.notices.All(); len(n) != 0 {
		t.Fatalf("a refused handshake is one error, not also a death notice: %v", n)
	}
}

func TestNameMismatchIsRefused(t *testing.T) {
	s := script{decl: basicDecl()}
	s.decl.Name = "other"
	_, err := start(t, s, nil)
	if err == nil || !strings.Contains(err.Error(), `as "other", but its manifest names it "t"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestHandshakeDeadline(t *testing.T) {
	s := script{init: func(*peer, msg) {}} // never answers
	_, err := start(t, s, func(o *Options) { o.Deadlines.Initialize = 50 * time.Millisecond })
	if err == nil || !strings.Contains(err.Error(), "no answer to initialize within 50ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestClaimedTraitsAreIgnored(t *testing.T) {
	s := echoScript()
	s.decl.Tools[0].Traits = &sdk.ToolTraits{Trusted: true, ReadOnly: true, ConcurrencySafe: true, Interrupt: sdk.InterruptCancel}
	e := mustStart(t, s, nil)
	tl := e.tool("plugin__t__echo")
	if tl.Traits() != (sdk.ToolTraits{}) {
		t.Fatalf("traits = %+v, want the untrusted default", tl.Traits())
	}
	if tl.Spec().Traits != nil {
		t.Fatal("the host-facing spec must not carry the plugin's claim")
	}
}

func TestToolNamesRewrittenAndChecked(t *testing.T) {
	s := echoScript()
	long := strings.Repeat("x", 60)
	s.decl.Tools = append(s.decl.Tools,
		sdk.ToolSpec{Name: long}, sdk.ToolSpec{Name: "bad name"}, sdk.ToolSpec{Name: "a__b"}, sdk.ToolSpec{Name: "echo"})
	e := mustStart(t, s, nil)
	tools := e.plugin.Contributions().Tools
	if len(tools) != 1 || tools[0].Spec().Name != "plugin__t__echo" {
		t.Fatalf("tools = %v", tools)
	}
	var msgs []string
	for _, n := range e.notices.All() {
		msgs = append(msgs, n.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"longer than 64 characters", "does not match", `may not contain "__"`, "declared twice"} {
		if !strings.Contains(all, want) {
			t.Errorf("no notice containing %q in %q", want, all)
		}
	}
}

func TestUndeclaredCapabilitiesAreAbsent(t *testing.T) {
	e := mustStart(t, echoScript(), nil)
	c := e.plugin.Contributions()
	if len(c.Commands)+len(c.Contributors)+len(c.Compactors)+len(c.Providers)+len(c.Hooks)+len(c.Services) != 0 {
		t.Fatalf("undeclared kinds must be absent: %+v", c)
	}
}

func TestReservedServiceKeyIsRefused(t *testing.T) {
	s := echoScript()
	s.decl.Services = []protocol.ServiceDecl{{Key: protocol.HostServiceKey}, {Key: "mine"}}
	e := mustStart(t, s, nil)
	c := e.plugin.Contributions()
	if len(c.Services) != 1 || c.Services[0].Key() != "mine" {
		t.Fatalf("services = %v", c.Services)
	}
}

func TestToolCallWithProgress(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		var tc protocol.ToolCallParams
		json.Unmarshal(m.Params, &tc)
		p.notify(protocol.NotifyToolProgress, protocol.ToolProgress{CallID: tc.CallID, Tail: "working"})
		p.notify(protocol.NotifyToolProgress, protocol.ToolProgress{CallID: "someone-else", Tail: "stray"})
		echoAnswer(p, m)
		return true
	}}
	e := mustStart(t, s, nil)
	u := &ui{}
	out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", u)
	if err != nil || out.Text() != "echo {}" {
		t.Fatalf("out = %+v, err = %v", out, err)
	}
	if len(u.progress) != 1 || u.progress[0] != "working" {
		t.Fatalf("progress = %v", u.progress)
	}
	if !strings.Contains(e.log.String(), "tool/progress for no running call") {
		t.Fatalf("stray progress not logged: %s", e.log.String())
	}
}

func TestToolDeadlineThenWedgeKillThenRespawn(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method != protocol.MethodToolCall {
			return true
		}
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if !first {
			echoAnswer(p, m)
		}
		return true // the first call is never answered
	}}
	ct := &countingTransport{}
	e := mustStart(t, s, func(o *Options) {
		ct.Transport = mem.New(s.main, nil)
		o.Transport = ct
		// Long enough for the call after the respawn on a loaded machine.
		o.Deadlines.Tool = 300 * time.Millisecond
		o.Deadlines.Grace = 50 * time.Millisecond
	})
	tl := e.tool("plugin__t__echo")
	_, err := call(t, tl, context.Background(), "c1", nil)
	var de *DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "tool/call did not answer within 300ms") {
		t.Fatalf("err = %v", err)
	}
	n := e.notices.Next(t)
	if !strings.Contains(n.Message, "unanswered") || !strings.Contains(n.Message, "wedged") {
		t.Fatalf("notice = %v", n)
	}
	// The next read respawns the killed instance.
	waitStatus(t, e.plugin, "dead")
	out, err := call(t, tl, context.Background(), "c2", nil)
	if err != nil || out.Text() != "echo {}" {
		t.Fatalf("after respawn: %v %v", out, err)
	}
	if ct.count() != 2 {
		t.Fatalf("starts = %d, want 2", ct.count())
	}
	if len(e.notices.All()) != 1 {
		t.Fatalf("one notice per death, got %v", e.notices.All())
	}
}

// waitStatus waits for p's state to be want, woken at each move.
func waitStatus(t *testing.T, p *Plugin, want string) {
	t.Helper()
	limit := time.NewTimer(testutil.WaitLimit)
	defer limit.Stop()
	for {
		p.mu.Lock()
		state, moved := p.sup.state, p.sup.watch()
		p.mu.Unlock()
		if state.String() == want {
			return
		}
		select {
		case <-moved:
		case <-limit.C:
			t.Fatalf("status = %s, want %s", p.Status(), want)
		}
	}
}

func TestCancelledCallIsStillAwaited(t *testing.T) {
	cancelSeen := make(chan string, 1)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodToolCall:
			// Answer only after the cancel arrives.
			go func(m msg) {
				id := <-cancelSeen
				p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("stopped " + id)}}})
			}(m)
		case protocol.NotifyToolCancel:
			var c protocol.ToolCancel
			json.Unmarshal(m.Params, &c)
			cancelSeen <- c.CallID
		}
		return true
	}}
	e := mustStart(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := call(t, e.tool("plugin__t__echo"), ctx, "c9", nil)
	if err != nil || out.Text() != "stopped c9" {
		t.Fatalf("a cancelled call must still get its answer: %+v %v", out, err)
	}
}

func TestCancelledCallIgnoredUntilDeadline(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(*peer, msg) bool { return true }}
	e := mustStart(t, s, func(o *Options) { o.Deadlines.Tool = 80 * time.Millisecond; o.Deadlines.Grace = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := call(t, e.tool("plugin__t__echo"), ctx, "c1", nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 80*time.Millisecond {
		t.Fatalf("err = %v after %v; a plugin that ignores cancel is waited for until the deadline", err, time.Since(start))
	}
}

func TestAskRouting(t *testing.T) {
	answers := make(chan msg, 4)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			var tc protocol.ToolCallParams
			json.Unmarshal(m.Params, &tc)
			go func(m msg) {
				// own call: allowed
				p.request(100, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "ask",
					Params: json.RawMessage(`{"call":"` + tc.CallID + `","question":"sure?"}`)})
				own := <-answers
				// foreign call: refused
				p.request(101, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "ask",
					Params: json.RawMessage(`{"call":"not-mine","question":"q"}`)})
				foreign := <-answers
				p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{
					sdk.TextPart(string(own.Result)), sdk.TextPart(foreign.Error.Message)}}})
			}(m)
		case m.Method == "" && m.ID != nil:
			answers <- m
		}
		return true
	}}
	e := mustStart(t, s, nil)
	out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", &ui{answer: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Parts[0].Text != `{"result":{"answer":"yes:sure?"}}` {
		t.Fatalf("own ask = %s", out.Parts[0].Text)
	}
	if !strings.Contains(out.Parts[1].Text, `ask refused: call "not-mine" is not a call plugin t is running now`) {
		t.Fatalf("foreign ask = %s", out.Parts[1].Text)
	}
	// After the call has ended, its id is refused too.
	ended := make(chan msg, 1)
	s2 := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			echoAnswer(p, m)
			p.request(7, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "ask",
				Params: json.RawMessage(`{"call":"c1","question":"late?"}`)})
		case m.ID != nil && m.Method == "":
			ended <- m
		}
		return true
	}}
	e2 := mustStart(t, s2, nil)
	if _, err := call(t, e2.tool("plugin__t__echo"), context.Background(), "c1", &ui{}); err != nil {
		t.Fatal(err)
	}
	m := <-ended
	if m.Error == nil || !strings.Contains(m.Error.Message, "ask refused") {
		t.Fatalf("ask on a finished call = %+v", m)
	}
}

func TestNoticeFromPlugin(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			p.request(1, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "bingo.host", Method: "notice",
				Params: json.RawMessage(`{"level":"warn","message":"disk\nfull"}`)})
			echoAnswer(p, m)
		}
		return true
	}}
	e := mustStart(t, s, nil)
	call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	n := e.notices.Next(t)
	if n.Plugin != "t" || n.Level != "warn" || n.Message != "disk full" {
		t.Fatalf("notice = %+v", n)
	}
}

func TestDeathRespawnBackoffAndOneNoticePerDeath(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := dieOnRequest()
	ct := &countingTransport{Transport: mem.New(s.main, nil)}
	e := mustStart(t, s, func(o *Options) {
		o.Transport = ct
		o.Clock = clock
		o.Backoff = Backoff{Initial: time.Second, Max: 4 * time.Second, Reset: time.Hour}
	})
	tl := e.tool("plugin__t__echo")
	die := func() {
		t.Helper()
		_, err := tl.Call(context.Background(), sdk.ToolCall{ID: "d", Input: json.RawMessage(`"die"`)}, &ui{})
		if !errors.Is(err, sdk.ErrUnavailable) || !strings.Contains(err.Error(), "stopped during tool/call") {
			t.Fatalf("dying call: %v", err)
		}
		waitStatus(t, e.plugin, "dead")
	}
	ok := func() error { _, err := call(t, tl, context.Background(), "x", nil); return err }

	die() // death 1: the next read respawns at once
	if err := ok(); err != nil {
		t.Fatalf("first respawn: %v", err)
	}
	die() // death 2: backoff 1s
	// The fake clock also runs on with real time, so the wait left is the
	// backoff less what the test took since the death.
	if err := ok(); !errors.Is(err, sdk.ErrUnavailable) || !regexp.MustCompile(`next restart in (1s|9\d\dms)`).MatchString(err.Error()) {
		t.Fatalf("within backoff: %v", err)
	}
	clock.Advance(time.Second)
	if err := ok(); err != nil {
		t.Fatalf("after backoff: %v", err)
	}
	die() // death 3: backoff 2s
	clock.Advance(1500 * time.Millisecond)
	if err := ok(); !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("backoff must double: %v", err)
	}
	clock.Advance(500 * time.Millisecond)
	if err := ok(); err != nil {
		t.Fatal(err)
	}
	if got := ct.count(); got != 4 {
		t.Fatalf("starts = %d, want 4 (1 + 3 respawns)", got)
	}
	deaths := 0
	for _, n := range e.notices.All() {
		if strings.Contains(n.Message, "stopped") {
			deaths++
		}
	}
	if deaths != 3 {
		t.Fatalf("want exactly one notice per death (3), got %v", e.notices.All())
	}
}

func TestConcurrentReadsShareOneRespawn(t *testing.T) {
	s := dieOnRequest()
	ct := &countingTransport{Transport: mem.New(s.main, nil)}
	e := mustStart(t, s, func(o *Options) { o.Transport = ct })
	tl := e.tool("plugin__t__echo")
	tl.Call(context.Background(), sdk.ToolCall{ID: "d", Input: json.RawMessage(`"die"`)}, &ui{})
	waitStatus(t, e.plugin, "dead")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := call(t, tl, context.Background(), "c"+string(rune('a'+i)), nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ct.count() != 2 {
		t.Fatalf("starts = %d, want 2: concurrent reads share one respawn", ct.count())
	}
}

func TestGarbageLinesAreLoggedAndSkipped(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			p.raw("hello, I am not JSON")
			p.raw(`{"jsonrpc":"2.0"}`)
			p.raw(`[1,2,3]`)
			p.raw("")
			echoAnswer(p, m)
		}
		return true
	}}
	e := mustStart(t, s, nil)
	out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	if err != nil || out.Text() != "echo {}" {
		t.Fatalf("%v %v", out, err)
	}
	log := e.log.String()
	for _, want := range []string{"hello, I am not JSON", `{\"jsonrpc\":\"2.0\"}`, "[1,2,3]"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestHugeLines(t *testing.T) {
	big := strings.Repeat("x", 32<<20)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			var tc protocol.ToolCallParams
			json.Unmarshal(m.Params, &tc)
			if string(tc.Input) == `"over"` {
				p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(strings.Repeat("y", 2<<20))}}})
				echoAnswer(p, m) // the same id again, small: this one is the answer
				return true
			}
			p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(big)}}})
		}
		return true
	}}
	t.Run("32MiB answer arrives", func(t *testing.T) {
		// Under -race on a loaded 2-core machine moving 32 MiB through
		// the line reader and the decoders takes 20–40 s: the default
		// minute is too close to that to say anything but "slow".
		e := mustStart(t, s, func(o *Options) { o.Deadlines.Tool = 5 * time.Minute })
		out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
		if err != nil || len(out.Text()) != len(big) {
			t.Fatalf("len = %d, err = %v", len(out.Text()), err)
		}
	})
	t.Run("line over the cap is skipped", func(t *testing.T) {
		e := mustStart(t, s, func(o *Options) { o.MaxLine = 1 << 20 })
		tl := e.tool("plugin__t__echo")
		out, err := tl.Call(context.Background(), sdk.ToolCall{ID: "c", Input: json.RawMessage(`"over"`)}, &ui{})
		if err != nil || out.Text() != `echo "over"` {
			t.Fatalf("%v %v", out.Text()[:min(50, len(out.Text()))], err)
		}
		if !strings.Contains(e.log.String(), "line exceeds the size cap") {
			t.Fatalf("log: %s", e.log.String()[:min(500, len(e.log.String()))])
		}
	})
}

func TestUnknownIDAndDoubleAnswers(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			echoAnswer(p, m)
			echoAnswer(p, m) // twice
			p.send(map[string]any{"jsonrpc": "2.0", "id": 987654, "result": map[string]any{}})
		}
		return true
	}}
	e := mustStart(t, s, nil)
	tl := e.tool("plugin__t__echo")
	for i := range 3 {
		out, err := call(t, tl, context.Background(), "c"+string(rune('0'+i)), nil)
		if err != nil || out.Text() != "echo {}" {
			t.Fatalf("%v %v", out, err)
		}
	}
	if !strings.Contains(e.log.String(), "no corresponding request") {
		t.Fatalf("stray answers not logged: %s", e.log.String())
	}
	if e.plugin.Status() != "running" {
		t.Fatal("stray answers must not end the instance")
	}
}

func TestRemoteErrorIsReported(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			p.replyErr(m, -32602, "no such tool")
		}
		return true
	}}
	e := mustStart(t, s, nil)
	_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != -32602 || err.Error() != "plugin t: tool/call: no such tool" {
		t.Fatalf("err = %v", err)
	}
}

// A request for any other method, an empty one included, is answered
// with method not found.
func TestHostAnswersOnlyServiceCall(t *testing.T) {
	for _, method := range []string{"fs/read", ""} {
		t.Run(fmt.Sprintf("%q", method), func(t *testing.T) {
			got := make(chan msg, 1)
			s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
				switch {
				case m.Method == protocol.MethodToolCall:
					p.request(5, method, map[string]any{})
					r := <-got
					p.reply(m, protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(fmt.Sprint(r.Error.Code, " ", r.Error.Message))}}})
				case m.ID != nil && m.Method == "":
					got <- m
				}
				return true
			}}
			// The reply arrives on the reader loop, so the tool answer must be sent
			// from another goroutine.
			s2 := script{decl: s.decl, handle: func(p *peer, m msg) bool {
				if m.Method == protocol.MethodToolCall {
					go s.handle(p, m)
					return true
				}
				return s.handle(p, m)
			}}
			e := mustStart(t, s2, nil)
			out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
			if want := "-32601 the host answers only service/call, not " + method; err != nil || out.Text() != want {
				t.Fatalf("%v %v, want %q", out, err, want)
			}
		})
	}
}

func TestCloseEndsEverything(t *testing.T) {
	e := mustStart(t, echoScript(), nil)
	e.plugin.Close()
	if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	if len(e.notices.All()) != 0 {
		t.Fatal("closing is not a death")
	}
}

// The handshake's request is one like any other in the one engine, its
// write guarded as every write is: a plugin that never reads its stdin
// cannot hold Start past the write's bound (deadlines.initialize here);
// its start fails with one line and the instance is stopped. (Written
// through jsonrpc2's connection, the blocked write held Start for good.)
func TestHandshakeToAPluginNotReadingItsInput(t *testing.T) {
	deaf := func(ctx context.Context, _ io.Reader, _, _ io.Writer) error {
		<-ctx.Done() // never reads its stdin
		return nil
	}
	log := &testutil.SyncBuffer{}
	p := New(Options{Name: "t", Root: "/plugins/t", Transport: mem.New(deaf, log), Log: log,
		Deadlines: bounds.Deadlines{Initialize: 100 * time.Millisecond, Grace: 10 * time.Millisecond}})
	started := make(chan error, 1)
	go func() {
		_, err := p.Start(context.Background())
		started <- err
	}()
	select {
	case err := <-started:
		if err == nil || !strings.Contains(err.Error(), "handshake") {
			t.Fatalf("Start: %v, want the failed handshake", err)
		}
	case <-time.After(testutil.WaitLimit):
		t.Fatal("Start is still writing initialize to a plugin that does not read it")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
