package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// serviceCall is a plugin's request to the host's service "x" with id id.
func serviceCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"service/call","params":{"key":"x","method":"m"}}`, id)
}

// flooding answers a tool call once it has sent n requests, made by req
// from their ids 1…n, and read the answer to each. It sends them from
// another goroutine, since the host may stop reading them for a while.
func flooding(n int, req func(id int) string) script {
	var answered int
	var toolCall msg
	return script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			toolCall = m
			go func() {
				for i := 1; i <= n; i++ {
					p.raw(req(i))
				}
			}()
		case m.Method == "" && m.Error == nil:
			if answered++; answered == n {
				echoAnswer(p, toolCall)
			}
		}
		return true
	}}
}

// A plugin's requests to the host run at most MaxPluginRequests at once:
// past that the host stops reading from it until one is answered, and then
// answers every one. In a synctest bubble (the in-memory transport's pipes
// are channels), synctest.Wait shows the host has gone as far as it can
// with the bound full: no further.
func TestPluginRequestsInFlightAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		var running, most atomic.Int32
		full, release := make(chan struct{}), make(chan struct{})
		var fullOnce, releaseOnce sync.Once
		defer releaseOnce.Do(func() { close(release) }) // on failure too: nothing stays blocked in the bubble
		router := func(ctx context.Context, _, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
			now := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			if now >= MaxPluginRequests {
				fullOnce.Do(func() { close(full) })
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return json.RawMessage(`{}`), nil
		}
		e := mustStart(t, flooding(n, serviceCall), func(o *Options) { o.Services = router })
		done := make(chan error, 1)
		go func() {
			_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
			done <- err
		}()
		<-full
		synctest.Wait()
		if got := running.Load(); got != MaxPluginRequests {
			t.Fatalf("%d of the plugin's requests running once the host could go no further; the bound is %d", got, MaxPluginRequests)
		}
		releaseOnce.Do(func() { close(release) })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := most.Load(); got != MaxPluginRequests {
			t.Fatalf("%d of the plugin's requests ran at once; the bound is %d", got, MaxPluginRequests)
		}
	})
}

// A plugin that floods the host with requests and never reads the answers
// blocks the host's answers like any other write: it is killed as wedged,
// with one notice (not one per answer waiting), and the next call
// respawns it.
func TestPluginNotReadingItsAnswers(t *testing.T) {
	var starts atomic.Int32
	flooder := func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
		if starts.Add(1) > 1 {
			return echoScript().main(ctx, stdin, stdout, stderr)
		}
		p := &peer{in: bufio.NewReader(stdin), out: stdout}
		m, err := p.read()
		if err != nil {
			return nil
		}
		p.reply(m, basicDecl())
		if _, err := p.read(); err != nil { // the tool call, never answered
			return nil
		}
		for i := 1; ctx.Err() == nil; i++ {
			if _, err := io.WriteString(stdout, serviceCall(i)+"\n"); err != nil {
				break // killed
			}
		}
		<-ctx.Done()
		return nil
	}
	e := mustStart(t, script{}, func(o *Options) {
		o.Transport = mem.New(flooder, nil)
		o.Deadlines.Tool = 10 * time.Second // fail fast without the guard, not after a minute
		o.Deadlines.Grace = 100 * time.Millisecond
		o.Services = func(context.Context, string, string, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}
	})
	_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	if !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "not reading its input: sending the answer to its request blocked for 100ms") {
		t.Fatalf("notice = %v", n)
	}
	if out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c2", nil); err != nil || out.Text() != "echo {}" {
		t.Fatalf("after the respawn: %v, %v", out, err)
	}
	if n := e.notices.All(); len(n) != 1 {
		t.Fatalf("notices = %v, want the one", n)
	}
}

// A flood of a plugin's own notices reaches the person as NoticeBurst of
// them and then one summary line a NoticeEvery; every notice is answered at
// once, and the ones not shown are in the plugin's log.
func TestNoticeFloodIsSummarised(t *testing.T) {
	const n = 1000
	notice := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"service/call","params":{"key":"bingo.host","method":"notice","params":{"level":"info","message":"n%d"}}}`, id, id)
	}
	e := mustStart(t, flooding(n, notice), func(o *Options) { o.LogPath = "/logs/plugin-t.log" })
	start := time.Now()
	if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); err != nil {
		t.Fatal(err) // the call is answered once every notice has been
	}
	// The summary comes without waiting for Close, once a token is due.
	summary := regexp.MustCompile(`^… and ([0-9,]+) more notices; see its log \(/logs/plugin-t\.log\)$`)
	for shown := 0; !summary.MatchString(e.notices.Next(t).Message); shown++ {
		if shown > NoticeBurst+int(time.Since(start)/NoticeEvery)+1 {
			t.Fatalf("%d notices shown, and no summary: %v", shown, e.notices.All())
		}
	}
	e.plugin.Close()
	elapsed := time.Since(start)

	shown, summarised, lines := 0, 0, 0
	for _, x := range e.notices.All() {
		lines++
		if m := summary.FindStringSubmatch(x.Message); m != nil {
			c, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			summarised += c
		} else {
			shown++
		}
	}
	if shown+summarised != n {
		t.Errorf("%d notices shown and %d summarised, of %d", shown, summarised, n)
	}
	// One line a NoticeEvery after the burst, the one Close may add, and one
	// for rounding.
	if most := NoticeBurst + int(elapsed/NoticeEvery) + 2; lines > most {
		t.Errorf("%d lines for %d notices in %v; the bound is %d", lines, n, elapsed, most)
	}
	if logged := strings.Count(e.log.String(), "bridge: notice not shown"); logged != n-shown {
		t.Errorf("%d notices not shown reached the log, want %d", logged, n-shown)
	}
}

// endless is a provider that streams text deltas of size bytes until it
// hears provider/cancel: then it ends the stream. With pace, its deltas
// take time.
func endless(size int, pace *pacing) script {
	decl := basicDecl()
	decl.Providers = []protocol.ProviderDecl{{ID: "endless"}}
	stop := make(chan struct{})
	var once sync.Once
	delta := sdk.StreamEvent{Kind: sdk.EventText, Text: strings.Repeat("x", size)}
	return script{decl: decl, handle: func(p *peer, m msg) bool {
		switch m.Method {
		case protocol.MethodProviderStream:
			var ps protocol.ProviderStreamParams
			json.Unmarshal(m.Params, &ps)
			go func() {
				if pace != nil && pace.clock.whenArmed(1, pace.total, pace.total) == 0 {
					return // the stream never began its wait: the test fails on it
				}
				var moved time.Duration
				for {
					select {
					case <-stop:
						p.reply(m, protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "cancelled"}})
						return
					default:
					}
					if p.notify(protocol.NotifyProviderDelta, protocol.ProviderDelta{StreamID: ps.StreamID, Event: delta}) != nil {
						return // the instance has ended
					}
					if pace != nil && moved <= pace.total {
						pace.clock.Advance(pace.gap)
						moved += pace.gap
					}
				}
			}()
		case protocol.NotifyProviderCancel:
			once.Do(func() { close(stop) })
		case protocol.MethodToolCall:
			echoAnswer(p, m)
		}
		return true
	}}
}

// pacing is how endless takes time: from when the stream's total deadline
// (total, Deadlines.ProviderTotal) is armed, it moves clock gap after each
// delta, taking that long to make the next, until it has moved it past
// total; then its deltas take no time, while the host catches up with the
// time it made pass.
type pacing struct {
	clock      *fakeClock
	gap, total time.Duration
}

// stream runs the plugin's one provider and returns what reached the
// caller, failing the test if the stream does not end.
func stream(t *testing.T, e *env) (delivered int, err error) {
	t.Helper()
	done := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		_, err := e.plugin.Contributions().Providers[0].Stream(context.Background(), sdk.ProviderRequest{}, func(ev sdk.StreamEvent) {
			mu.Lock()
			delivered += len(ev.Text)
			mu.Unlock()
		})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(testutil.WaitLimit):
		t.Fatal("the stream never ended")
	}
	mu.Lock()
	defer mu.Unlock()
	return delivered, err
}

// A stream that never ends, however lively, is cancelled at its cap or
// its total deadline, whichever comes first, with one notice; the caller
// has at most the cap, and the plugin goes on.
func TestEndlessStreamIsCutOff(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	for _, c := range []struct {
		name   string
		plugin script
		tweak  func(*Options)
		err    func(error) bool
		notice string
	}{{
		name:   "cap",
		plugin: endless(64<<10, nil),
		tweak:  func(o *Options) { o.Limits.ProviderResponseMiB = 1 },
		err: func(err error) bool {
			return err.Error() == "plugin t: provider/stream: the response passed 1 MiB, the cap on one response"
		},
		notice: "provider/stream sent more than 1 MiB; cancelled it",
	}, {
		name: "total deadline",
		// A delta every minute, for an hour and a minute; no other
		// deadline comes within that.
		plugin: endless(10, &pacing{clock: clock, gap: time.Minute, total: time.Hour}),
		tweak: func(o *Options) {
			o.Clock = clock
			o.Deadlines.ProviderTotal = time.Hour
			o.Deadlines.Provider, o.Deadlines.ProviderIdle = 10*time.Hour, 10*time.Hour
			o.Deadlines.Tool, o.Deadlines.Grace, o.Deadlines.IdleStop = 10*time.Hour, 10*time.Hour, 10*time.Hour
		},
		err:    func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		notice: "provider/stream went on past its total deadline of 1h0m0s; cancelled it",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := mustStart(t, c.plugin, c.tweak)
			delivered, err := stream(t, e)
			if err == nil || !c.err(err) {
				t.Fatalf("err = %v; notices %v; log:\n%s", err, e.notices.All(), e.log.String())
			}
			if delivered > 1<<20 {
				t.Errorf("%d bytes reached the caller past the 1 MiB cap", delivered)
			}
			if _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); err != nil {
				t.Errorf("after the cut-off: %v", err)
			}
			if n := e.notices.All(); len(n) != 1 || n[0].Message != c.notice {
				t.Errorf("notices = %v, want %q", n, c.notice)
			}
		})
	}
}
