package mcpbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// rawServer is an MCP server written by hand, to misbehave where the
// sdk's own server cannot: answer returns the result (or, as an error,
// the error) to a method, or nil to leave it unanswered. Notifications
// reach answer too, and what it returns for them is dropped.
func rawServer(answer func(method string) (any, error)) *mem.Transport {
	return mem.New(func(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
		in := bufio.NewScanner(stdin)
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(in.Bytes(), &m) != nil {
				continue
			}
			res, err := answer(m.Method)
			if m.ID == nil {
				continue
			}
			if n, ok := res.(notifiedFirst); ok {
				if _, err := io.WriteString(stdout, n.notes); err != nil {
					return err
				}
				res = n.result
			}
			var line []byte
			var unread errUnread
			switch {
			case errors.As(err, &unread):
				line, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": err.Error()}})
			case err != nil:
				line, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": err.Error()}})
			case res != nil:
				line, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			default:
				continue
			}
			if _, err := stdout.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		return ctx.Err()
	}, nil)
}

// errUnread is an error rawServer answers with a null id, as a server
// that could not read the request's id does.
type errUnread string

func (e errUnread) Error() string { return string(e) }

// notifiedFirst is an answer rawServer writes after notes, lines of
// notifications sent before it.
type notifiedFirst struct {
	notes  string
	result any
}

// legacy answers as a server of protocol 2025-11-25 with one tool, deaf,
// whose calls it never answers.
func legacy(method string) (any, error) {
	switch method {
	case "initialize":
		return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "raw", "version": "1"}}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{"name": "deaf", "inputSchema": map[string]any{"type": "object"}}}}, nil
	case "tools/call":
		return nil, nil
	}
	return nil, errors.New("method not found: " + method)
}

// A server that fails to initialize fails the handshake with one error,
// which the host makes its one notice.
func TestInitializeFails(t *testing.T) {
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(rawServer(func(string) (any, error) {
		return nil, errors.New("no thanks")
	}), mcpbridge.Config{Name: "raw"})})
	defer p.Close()
	_, err := p.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the MCP server failed to initialize") || !strings.Contains(err.Error(), "no thanks") {
		t.Fatalf("Start: %v, want the server's refusal", err)
	}
}

// An older server is spoken to in its own protocol version, as the sdk
// negotiates it.
func TestOlderProtocol(t *testing.T) {
	log := &testutil.SyncBuffer{}
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(rawServer(legacy), mcpbridge.Config{Name: "raw", Log: log})})
	defer p.Close()
	decl, err := p.Start(context.Background())
	if err != nil || len(decl.Tools) != 1 || decl.Tools[0].Name != "deaf" {
		t.Fatalf("Start: %+v, %v", decl, err)
	}
	if !strings.Contains(log.String(), `MCP server "raw" version "1", protocol 2025-11-25`) {
		t.Errorf("log: %s", log)
	}
}

// A server that answers nothing once initialized, not even a ping: the
// bridge's deadline ends the call (the server is told), the translator's
// own answer to it shows nothing, the probe's ping goes unanswered, and
// the wedge rule kills the server, with one notice. (A server that
// answers the ping, even with an error, answers something: it lives.)
func TestNeverAnswers(t *testing.T) {
	notices := testutil.NewCollector[bridge.Notice]()
	silent := func(method string) (any, error) {
		if method == "ping" {
			return nil, nil
		}
		return legacy(method)
	}
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(rawServer(silent), mcpbridge.Config{Name: "raw"}),
		Deadlines: bounds.Deadlines{Tool: 100 * time.Millisecond, Grace: 100 * time.Millisecond}, Raise: notices.Add})
	defer p.Close()
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tl := p.Contributions().Tools[0]
	_, err := tl.Call(context.Background(), sdk.ToolCall{ID: "c1", Name: tl.Spec().Name, Input: json.RawMessage(`{}`)}, &testutil.RecordingUI{})
	if err == nil || !strings.Contains(err.Error(), "tool/call did not answer within 100ms") {
		t.Fatalf("call: %v, want the deadline", err)
	}
	if n := notices.Next(t); !strings.Contains(n.Message, "wedged") {
		t.Errorf("notice %+v, want the wedge", n)
	}
}

// The Conn Wrap returns is the server's: killing it kills the server, and
// the server ending ends it, with the server's exit.
func TestConnLifetime(t *testing.T) {
	serverEnded := make(chan struct{})
	inner := mem.New(func(ctx context.Context, stdin io.Reader, _, _ io.Writer) error {
		defer close(serverEnded)
		_, _ = io.Copy(io.Discard, stdin)
		return errors.New("server exit")
	}, nil)
	tr := mcpbridge.Wrap(inner, mcpbridge.Config{Name: "x"})
	if tr.Kind() != "mem" {
		t.Errorf("Kind %q, want the server's transport's", tr.Kind())
	}
	c, err := tr.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	<-serverEnded
	if err := c.Wait(); err == nil || err.Error() != "server exit" {
		t.Errorf("Wait after Kill: %v, want the server's exit", err)
	}

	quit := make(chan struct{})
	inner = mem.New(func(context.Context, io.Reader, io.Writer, io.Writer) error {
		<-quit
		return errors.New("gone")
	}, nil)
	c, err = mcpbridge.Wrap(inner, mcpbridge.Config{Name: "x"}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	close(quit)
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("reading a Conn whose server ended: %v, want EOF", err)
	}
	if err := c.Wait(); err == nil || err.Error() != "gone" {
		t.Errorf("Wait: %v, want the server's exit", err)
	}
}

// A second initialize is refused; the first one's session stands.
func TestInitializeTwice(t *testing.T) {
	c, err := mcpbridge.Wrap(rawServer(legacy), mcpbridge.Config{Name: "raw"}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Kill()
	in := bufio.NewScanner(c)
	for i := range 2 {
		if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":`+string(rune('1'+i))+`,"method":"initialize","params":{"protocol":5}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		if !in.Scan() {
			t.Fatalf("no answer %d: %v", i, in.Err())
		}
		if got := in.Text(); (i == 1) != strings.Contains(got, "initialize was sent already") {
			t.Errorf("answer %d: %s", i, got)
		}
	}
}

// A server flooding tools/list_changed is re-listed a bounded number of
// times: notifications that arrive while a re-list waits join it.
func TestListChangedFloodCoalesced(t *testing.T) {
	const flood = 300
	var lists atomic.Int32
	inner := rawServer(func(method string) (any, error) {
		switch method {
		case "initialize":
			return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}}, nil
		case "tools/list":
			lists.Add(1)
			return map[string]any{"tools": []any{map[string]any{"name": "churn", "inputSchema": map[string]any{"type": "object"}}}}, nil
		case "tools/call":
			return notifiedFirst{strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n", flood),
				map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}}, nil
		}
		return map[string]any{}, nil
	})
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(inner, mcpbridge.Config{Name: "raw"})})
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tl := p.Contributions().Tools[0]
	if _, err := tl.Call(context.Background(), sdk.ToolCall{ID: "c1", Name: tl.Spec().Name, Input: json.RawMessage(`{}`)}, &testutil.RecordingUI{}); err != nil {
		t.Fatal(err)
	}
	p.Close() // waits for the translator's goroutines, so every re-list has been asked
	// The sdk hears each notification twice (its reader, then its handler),
	// so without coalescing this is 1 + 2×flood (601). How many batches a
	// flood falls into depends on how fast each re-list comes back: 3–5
	// alone, 18 beside another make test; a tenth of the uncoalesced count
	// is the bound.
	if n := lists.Load(); n < 2 || n > (1+2*flood)/10 {
		t.Errorf("tools/list asked %d times for %d list_changed, want the handshake's and a few more", n, flood)
	}
}

// A server whose tools/list never ends (a next cursor on every page) is
// read to a bound, declared that far, and said once in the log; so is one
// offering more tools than the bound. Unbounded, the first waits out the
// handshake's deadline and fails, and a re-list after list_changed, which
// has none, would read until the instance ends.
func TestListBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perPage int
		want    int
		line    string
	}{
		{"endless pages", 1, 100, "more than 100 pages"},
		{"too many tools", 400, 1000, "more than 1000; the rest are left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			log := &testutil.SyncBuffer{}
			p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Deadlines: bounds.Deadlines{Initialize: 20 * time.Second}, Transport: mcpbridge.Wrap(rawServer(func(method string) (any, error) {
				switch method {
				case "initialize":
					return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
						"serverInfo": map[string]any{"name": "raw", "version": "1"}}, nil
				case "tools/list":
					var tools []any
					for range tc.perPage {
						n++
						tools = append(tools, map[string]any{"name": "t" + strconv.Itoa(n), "inputSchema": map[string]any{"type": "object"}})
					}
					return map[string]any{"tools": tools, "nextCursor": "more"}, nil
				}
				return nil, errors.New("method not found: " + method)
			}), mcpbridge.Config{Name: "raw", Log: log})})
			defer p.Close()
			decl, err := p.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(decl.Tools) != tc.want {
				t.Errorf("declared %d tools, want %d", len(decl.Tools), tc.want)
			}
			if strings.Count(log.String(), tc.line) != 1 {
				t.Errorf("log %q, want one line saying %q", log, tc.line)
			}
		})
	}
}

// A server whose resources/list never ends, with no resource on any page,
// still answers the contributor: the pages are read to the bound.
// Unbounded, the contribution outlives its deadline.
func TestResourcesEndlessPages(t *testing.T) {
	deadlines := bounds.Deadlines{Contributor: 20 * time.Second}
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Deadlines: deadlines, Transport: mcpbridge.Wrap(rawServer(func(method string) (any, error) {
		switch method {
		case "initialize":
			return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"resources": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}}, nil
		case "resources/list":
			return map[string]any{"resources": []any{}, "nextCursor": "more"}, nil
		}
		return nil, errors.New("method not found: " + method)
	}), mcpbridge.Config{Name: "raw", Resources: true, Deadlines: deadlines})})
	defer p.Close()
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := p.Contributions().Contributors
	if len(cs) != 1 {
		t.Fatalf("contributors %d, want the resources one", len(cs))
	}
	pieces, err := cs[0].Contribute(context.Background(), sdk.Query{Budget: 1000})
	if err != nil || len(pieces) != 0 {
		t.Fatalf("Contribute: %+v, %v, want no pieces and no error", pieces, err)
	}
}

// A request the wire cannot cancel (context/contribute) ends at its
// deadline in the translator too: the server hears notifications/cancelled
// for the read it never answered, proves it answers (a ping), and the
// translator answers, so the instance is not wedged and goes on serving.
// Before, the read ran under the instance's context: the server was never
// told, and the instance, owing the answer, was killed as wedged.
func TestContributeEndsAtItsDeadline(t *testing.T) {
	deadlines := bounds.Deadlines{Contributor: time.Second, Grace: 5 * time.Second}
	var starts, reads atomic.Int32
	cancelled, pinged := make(chan struct{}), make(chan struct{})
	var once, pingOnce sync.Once
	notices := testutil.NewCollector[bridge.Notice]()
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Deadlines: deadlines, Raise: notices.Add, Transport: mcpbridge.Wrap(rawServer(func(method string) (any, error) {
		switch method {
		case "initialize":
			starts.Add(1)
			return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"resources": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}}, nil
		case "resources/list":
			return map[string]any{"resources": []any{map[string]any{"uri": "mem://slow", "name": "slow"}}}, nil
		case "resources/read":
			if reads.Add(1) == 1 {
				return nil, nil // the first read is never answered
			}
			return map[string]any{"contents": []any{map[string]any{"uri": "mem://slow", "text": "at last"}}}, nil
		case "notifications/cancelled":
			once.Do(func() { close(cancelled) })
		case "ping":
			if reads.Load() == 1 {
				pingOnce.Do(func() { close(pinged) })
			}
		}
		return map[string]any{}, nil
	}), mcpbridge.Config{Name: "raw", Resources: true, Deadlines: deadlines})})
	defer p.Close()
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := p.Contributions().Contributors[0]
	if _, err := c.Contribute(context.Background(), sdk.Query{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Contribute: %v, want the deadline", err)
	}
	for what, ch := range map[string]chan struct{}{"notifications/cancelled": cancelled, "a ping after the read": pinged} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("the server never heard %s", what)
		}
	}
	pieces, err := c.Contribute(context.Background(), sdk.Query{})
	if err != nil || len(pieces) != 1 || pieces[0].Text != "at last" {
		t.Fatalf("the next Contribute: %+v, %v; want the resource", pieces, err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("the server started %d times, want once: it was never killed", n)
	}
	if n := notices.All(); len(n) != 0 {
		t.Errorf("notices %+v, want none", n)
	}
}

// A tool that requires tasks is not declared, and one notice says so.
func TestTaskRequiredNotOffered(t *testing.T) {
	notices := testutil.NewCollector[bridge.Notice]()
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Raise: notices.Add, Transport: mcpbridge.Wrap(rawServer(func(method string) (any, error) {
		if method == "tools/list" {
			obj := map[string]any{"type": "object"}
			return map[string]any{"tools": []any{
				map[string]any{"name": "plain", "inputSchema": obj},
				map[string]any{"name": "tasky", "inputSchema": obj, "execution": map[string]any{"taskSupport": "required"}},
			}}, nil
		}
		return legacy(method)
	}), mcpbridge.Config{Name: "raw"})})
	defer p.Close()
	decl, err := p.Start(context.Background())
	if err != nil || len(decl.Tools) != 1 || decl.Tools[0].Name != "plain" {
		t.Fatalf("Start: %+v, %v; want only the tool plain", decl, err)
	}
	n := notices.All()
	if len(n) != 1 || !strings.Contains(n[0].Message, "tool tasky: it can be run only as tasks") {
		t.Errorf("notices %+v, want one naming tasky", n)
	}
}

// A server that refuses server/discover with an error whose id is null is
// initialized through initialize.
func TestDiscoverRefusedWithNullID(t *testing.T) {
	log := &testutil.SyncBuffer{}
	p := bridge.New(bridge.Options{Name: "raw", Probe: mcpbridge.Probe, Transport: mcpbridge.Wrap(rawServer(func(method string) (any, error) {
		if method == "server/discover" {
			return nil, errUnread("Invalid Request")
		}
		return legacy(method)
	}), mcpbridge.Config{Name: "raw", Log: log})})
	defer p.Close()
	decl, err := p.Start(context.Background())
	if err != nil || len(decl.Tools) != 1 {
		t.Fatalf("Start: %+v, %v", decl, err)
	}
	if !strings.Contains(log.String(), "mcpbridge: server/discover was refused with an error of id null (-32600 Invalid Request): taken as its answer") {
		t.Errorf("log: %s", log)
	}
}

// A server that asks for its roots as it initializes, and applies them a
// moment after reading the answer (as server-filesystem does, checking
// each on disk first), has them by the time the host's first call, sent
// the instant the handshake ends, reaches it. (It once had not, now and
// then: a one-shot read was refused.)
func TestFirstCallFindsTheRootsApplied(t *testing.T) {
	const applying = 30 * time.Millisecond
	main := func(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
		var mu sync.Mutex
		send := func(m map[string]any) {
			m["jsonrpc"] = "2.0"
			b, _ := json.Marshal(m)
			mu.Lock()
			stdout.Write(append(b, '\n'))
			mu.Unlock()
		}
		var applied atomic.Bool
		in := bufio.NewScanner(stdin)
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(in.Bytes(), &m) != nil {
				continue
			}
			switch m.Method {
			case "initialize":
				send(map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": "2025-06-18",
					"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "roots", "version": "1"}}})
			case "notifications/initialized":
				send(map[string]any{"id": "roots-1", "method": "roots/list"})
			case "":
				if string(m.ID) == `"roots-1"` { // the answer: applied a moment later
					time.AfterFunc(applying, func() { applied.Store(true) })
				}
			case "tools/list":
				send(map[string]any{"id": m.ID, "result": map[string]any{"tools": []any{map[string]any{"name": "read", "inputSchema": map[string]any{"type": "object"}}}}})
			case "ping":
				send(map[string]any{"id": m.ID, "result": map[string]any{}})
			case "tools/call":
				text := "no roots yet"
				if applied.Load() {
					text = "roots applied"
				}
				send(map[string]any{"id": m.ID, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
			default:
				if m.ID != nil {
					send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
				}
			}
		}
		return ctx.Err()
	}
	p := bridge.New(bridge.Options{Name: "roots", Probe: mcpbridge.Probe,
		Transport: mcpbridge.Wrap(mem.New(main, nil), mcpbridge.Config{Name: "roots", Root: t.TempDir()})})
	defer p.Close()
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tl := p.Contributions().Tools[0]
	out, err := tl.Call(context.Background(), sdk.ToolCall{ID: "c1", Name: tl.Spec().Name, Input: json.RawMessage(`{}`)}, &testutil.RecordingUI{})
	if err != nil || out.Text() != "roots applied" {
		t.Fatalf("the first call: %q, %v; want the server to have applied its roots", out.Text(), err)
	}
}
