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
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// Status says each step of a plugin's life: idle on a cached
// declaration, starting while a read waits for its handshake, running,
// dead once its instance dies, running again after the next read, closed.
// A first start that fails leaves it not started.
func TestStatusFollowsTheLifecycle(t *testing.T) {
	answer := make(chan struct{})
	s := dieOnRequest()
	s.init = func(p *peer, m msg) {
		<-answer
		p.reply(m, basicDecl())
	}
	e, _ := lazy(t, s, basicDecl(), nil)
	release := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(release) // before Close, should the test stop early
	tl := e.tool("plugin__t__echo")
	if got := e.plugin.Status(); got != "idle" {
		t.Fatalf("before any read: %s, want idle", got)
	}
	read := make(chan error, 1)
	go func() { _, err := call(t, tl, context.Background(), "c1", nil); read <- err }()
	waitStatus(t, e.plugin, "starting")
	release()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if got := e.plugin.Status(); got != "running" {
		t.Fatalf("after the first read: %s, want running", got)
	}
	if _, err := tl.Call(context.Background(), sdk.ToolCall{ID: "d", Input: json.RawMessage(`"die"`)}, &ui{}); !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("dying call: %v", err)
	}
	waitStatus(t, e.plugin, "dead")
	if _, err := call(t, tl, context.Background(), "c2", nil); err != nil {
		t.Fatalf("respawn: %v", err)
	}
	if got := e.plugin.Status(); got != "running" {
		t.Fatalf("after the respawn: %s, want running", got)
	}
	if err := e.plugin.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.plugin.Status(); got != "closed" {
		t.Fatalf("after Close: %s, want closed", got)
	}

	broken := script{init: func(p *peer, m msg) { p.replyErr(m, -32603, "no config file") }}
	b, err := start(t, broken, nil)
	if err == nil || b.plugin.Status() != "not started" {
		t.Fatalf("a failed first start: %v, status %s; want an error and not started", err, b.plugin.Status())
	}
}

// Close cancels a start in flight, a read's respawn or Start itself,
// instead of waiting out the handshake's deadline; what waited for the
// start fails with ErrClosed.
func TestCloseCancelsAStartInFlight(t *testing.T) {
	asked := make(chan struct{}, 1)
	silent := script{init: func(*peer, msg) { asked <- struct{}{} }} // never answers initialize
	slow := func(o *Options) { o.Deadlines.Initialize = time.Minute }
	closeSoon := func(t *testing.T, p *Plugin) {
		t.Helper()
		<-asked // the handshake is on
		closed := make(chan error, 1)
		begun := time.Now()
		go func() { closed <- p.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close waited for the handshake")
		}
		t.Logf("Close took %s", time.Since(begun))
	}

	t.Run("respawn", func(t *testing.T) {
		e, _ := lazy(t, silent, basicDecl(), slow)
		read := make(chan error, 1)
		go func() { _, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil); read <- err }()
		closeSoon(t, e.plugin)
		if err := <-read; !errors.Is(err, ErrClosed) {
			t.Fatalf("the read that waited: %v, want ErrClosed", err)
		}
		if n := e.notices.All(); len(n) != 0 {
			t.Fatalf("closing is no failed start: %v", n)
		}
	})
	t.Run("Start", func(t *testing.T) {
		opts := Options{Name: "t", Root: "/plugins/t", Transport: mem.New(silent.main, nil)}
		slow(&opts)
		p := New(opts)
		started := make(chan error, 1)
		go func() { _, err := p.Start(context.Background()); started <- err }()
		closeSoon(t, p)
		select {
		case err := <-started:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("Start: %v, want ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Start went on with its handshake after Close")
		}
	})
}

// stubborn is a transport whose instances end, but whose stdin will not
// close and whose Kill fails, as a process group that refuses a signal.
type stubborn struct{ *mem.Transport }

type stubbornConn struct{ transport.Conn }

func (s stubborn) Start(ctx context.Context) (transport.Conn, error) {
	c, err := s.Transport.Start(ctx)
	if err != nil {
		return nil, err
	}
	return stubbornConn{c}, nil
}

func (c stubbornConn) Close() error {
	_ = c.Conn.Close()
	return errors.New("close |1: bad file descriptor")
}

func (c stubbornConn) Kill() error {
	_ = c.Conn.Kill()
	return errors.New("SIGTERM process group 42: operation not permitted")
}

// Close's error names the plugin and what it could not do; a second Close
// has nothing left to do.
func TestCloseSaysWhatItCouldNotStop(t *testing.T) {
	n := testutil.NewCollector[Notice]()
	p := New(Options{Name: "t", Root: "/plugins/t", Transport: stubborn{mem.New(echoScript().main, nil)}, Raise: n.Add})
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := p.Close()
	if err == nil {
		t.Fatal("Close said nothing of what it could not do")
	}
	for _, want := range []string{"plugin t", "closing its stdin: close |1: bad file descriptor", "stopping it: SIGTERM process group 42: operation not permitted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Close: %v; want it to say %q", err, want)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
