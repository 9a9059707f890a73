package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// notices collects what a provider's Notify hears.
type notices struct {
	mu   sync.Mutex
	said []string
}

func (n *notices) notify(s string) { n.mu.Lock(); n.said = append(n.said, s); n.mu.Unlock() }
func (n *notices) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.said...)
}

// bounded returns a provider for srv held to d and l, and what it says.
func bounded(t *testing.T, h http.HandlerFunc, d bounds.Deadlines, l bounds.Limits) (*Provider, *notices) {
	n := &notices{}
	p := newProvider(t, newServer(t, h), func(c *Config) { c.Deadlines, c.Limits, c.Notify = d, l, n.notify })
	return p, n
}

// Each bound of a provider plugin's stream holds the built-in provider's
// too: the first chunk, the silence after each, the whole stream, and the
// bytes of the response.
func TestStreamBounds(t *testing.T) {
	// hold is a server that says no more until the client goes away (the
	// request's body read first: until then the server cannot see it go),
	// or the test's own bound passes.
	hold := func(r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}

	t.Run("no first chunk within deadlines.provider", func(t *testing.T) {
		p, n := bounded(t, func(w http.ResponseWriter, r *http.Request) {
			startSSE(t, w)
			w.(http.Flusher).Flush()
			hold(r)
		}, bounds.Deadlines{Provider: 100 * time.Millisecond, ProviderIdle: time.Hour}, bounds.Limits{})
		start := time.Now()
		_, _, err := stream(t.Context(), p, hello)
		checkErrLine(t, err, `openai provider "oai": the server did not start answering within 100ms (deadlines.provider)`)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v does not match context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %v", took)
		}
		if got := n.all(); len(got) != 0 {
			t.Errorf("notices = %q; a missed deadline is the error alone, as a plugin's", got)
		}
	})
	t.Run("headers never come within deadlines.provider", func(t *testing.T) {
		p, _ := bounded(t, func(w http.ResponseWriter, r *http.Request) { hold(r) },
			bounds.Deadlines{Provider: 100 * time.Millisecond}, bounds.Limits{})
		_, _, err := stream(t.Context(), p, hello)
		checkErrLine(t, err, "did not start answering within 100ms (deadlines.provider)")
	})
	t.Run("silence after a chunk past deadlines.providerIdle", func(t *testing.T) {
		p, _ := bounded(t, func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(t, w)
			for range 5 { // each chunk within the idle deadline, all of them past it
				s.chunk(text("."), "")
				time.Sleep(60 * time.Millisecond)
			}
			s.raw(": a comment is no sign of life\n\n")
			hold(r)
		}, bounds.Deadlines{Provider: time.Hour, ProviderIdle: 150 * time.Millisecond}, bounds.Limits{})
		events, _, err := stream(t.Context(), p, hello)
		checkErrLine(t, err, "went silent for 150ms mid-answer (deadlines.providerIdle)")
		if got := sdk.Assemble(events).Content; got != "....." {
			t.Errorf("content %q: every chunk before the silence reaches the caller", got)
		}
	})
	t.Run("a lively stream past deadlines.providerTotal", func(t *testing.T) {
		p, n := bounded(t, func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(t, w)
			for r.Context().Err() == nil {
				s.chunk(text("."), "")
				time.Sleep(10 * time.Millisecond)
			}
		}, bounds.Deadlines{ProviderIdle: time.Hour, ProviderTotal: 200 * time.Millisecond}, bounds.Limits{})
		_, _, err := stream(t.Context(), p, hello)
		checkErrLine(t, err, "the stream went on past its total deadline of 200ms (deadlines.providerTotal)")
		if got := n.all(); len(got) != 1 || got[0] != `openai provider "oai": the stream went on past its total deadline of 200ms; cancelled it` {
			t.Errorf("notices = %q", got)
		}
	})
	t.Run("an endless stream past limits.providerResponseMiB", func(t *testing.T) {
		var sent int
		p, n := bounded(t, func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(t, w)
			piece := text(strings.Repeat("x", 16<<10))
			for r.Context().Err() == nil && sent < 64<<20 {
				s.chunk(piece, "")
				sent += 16 << 10
			}
		}, bounds.Deadlines{}, bounds.Limits{ProviderResponseMiB: 1})
		var got int
		_, err := p.Stream(t.Context(), hello, func(e sdk.StreamEvent) { got += len(e.Text) })
		var large *TooLargeError
		if !errors.As(err, &large) {
			t.Fatalf("err = %v", err)
		}
		checkErrLine(t, err, "the response passed 1 MiB, the cap on one response (limits.providerResponseMiB)")
		if got > 1<<20 {
			t.Errorf("%d bytes of text reached the caller past the 1 MiB cap", got)
		}
		if got := n.all(); len(got) != 1 || got[0] != `openai provider "oai": the stream sent more than 1 MiB; cancelled it` {
			t.Errorf("notices = %q", got)
		}
	})
	t.Run("the caller's cancel is still the caller's", func(t *testing.T) {
		p, n := bounded(t, func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(t, w)
			s.chunk(text("."), "")
			hold(r)
		}, bounds.Deadlines{}, bounds.Limits{})
		ctx, cancel := context.WithCancel(t.Context())
		_, err := p.Stream(ctx, hello, func(sdk.StreamEvent) { cancel() })
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "request stopped") {
			t.Fatalf("err = %v", err)
		}
		if got := n.all(); len(got) != 0 {
			t.Errorf("notices = %q", got)
		}
	})
}
