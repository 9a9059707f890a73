package bridge

import (
	"bufio"
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
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// serviceCall is a plugin's request to the host's service "x" with id id.
func serviceCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"service/call","params":{"key":"x","method":"m"}}`, id)
}

// A plugin's requests to the host run at most MaxPluginRequests at once:
// past that the host stops reading from it until one is answered, and then
// answers every one.
func TestPluginRequestsInFlightAreBounded(t *testing.T) {
	const n = 1000
	var running, most atomic.Int32
	full, release := make(chan struct{}), make(chan struct{})
	var fullOnce sync.Once
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
	// On a tool call the plugin sends n requests from another goroutine
	// (the host may stop reading them), and answers the call once it has
	// read all n answers.
	var answered int
	var toolCall msg
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		switch {
		case m.Method == protocol.MethodToolCall:
			toolCall = m
			go func() {
				for i := 1; i <= n; i++ {
					p.raw(serviceCall(i))
				}
			}()
		case m.Method == "" && m.Error == nil:
			if answered++; answered == n {
				echoAnswer(p, toolCall)
			}
		}
		return true
	}}
	e := mustStart(t, s, func(o *Options) { o.Services = router })
	done := make(chan error, 1)
	go func() {
		_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
		done <- err
	}()
	select {
	case <-full:
	case <-time.After(testutil.WaitLimit):
		t.Fatalf("only %d requests reached the host", running.Load())
	}
	time.Sleep(50 * time.Millisecond) // time for a reader without the bound to run past it
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got != MaxPluginRequests {
		t.Fatalf("%d of the plugin's requests ran at once; the bound is %d", got, MaxPluginRequests)
	}
}

// A plugin that floods the host with requests and never reads the answers
// blocks the host's answers like any other write: it is killed as wedged,
// with one notice, and the next call respawns it.
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
}
