package openai

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// DeadlineError is the error of a stream past one of its deadlines:
// Deadlines.Provider for its first chunk, ProviderIdle between two, or
// ProviderTotal for all of it. It matches context.DeadlineExceeded with
// errors.Is.
type DeadlineError struct {
	Provider string
	Setting  string // the deadline's settings key, e.g. "deadlines.providerIdle"
	After    time.Duration
	total    bool
}

func (e *DeadlineError) Error() string {
	if e.total {
		return fmt.Sprintf("openai provider %q: the stream went on past its total deadline of %s (%s); the answer is incomplete", e.Provider, e.After, e.Setting)
	}
	if e.Setting == "deadlines.providerIdle" {
		return fmt.Sprintf("openai provider %q: the server went silent for %s mid-answer (%s); the answer is incomplete", e.Provider, e.After, e.Setting)
	}
	return fmt.Sprintf("openai provider %q: the server did not start answering within %s (%s); it is stalled, or slower than that setting allows", e.Provider, e.After, e.Setting)
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *DeadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// TooLargeError is the error of a stream cut off at the cap on one
// response (Limits.ProviderResponseMiB), counted in the bytes of the
// response body.
type TooLargeError struct {
	Provider string
	MiB      int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("openai provider %q: the response passed %d MiB, the cap on one response (limits.providerResponseMiB)", e.Provider, e.MiB)
}

// guard holds one stream to its bounds, as the bridge holds a provider
// plugin's (package bridge, waitStream): until the first chunk the
// deadline is Deadlines.Provider (connecting, the headers and the first
// chunk), then ProviderIdle from each chunk to the next; ProviderTotal
// bounds the whole, and Limits.ProviderResponseMiB the bytes of the body.
// Past one it cancels the request's context with the bound's error as
// its cause: the read in progress returns at once and the connection is
// closed. A cut-off past the total or the cap is one notice, as the
// bridge raises one for a plugin's; a missed deadline is the error alone.
type guard struct {
	p      *Provider
	cancel context.CancelCauseFunc
	idle   *time.Timer
	total  *time.Timer

	mu    sync.Mutex
	after time.Duration // the deadline idle runs to
	key   string        // its settings key
}

func (p *Provider) guard(ctx context.Context) (context.Context, *guard) {
	ctx, cancel := context.WithCancelCause(ctx)
	g := &guard{p: p, cancel: cancel, after: p.deadlines.Provider, key: "deadlines.provider"}
	g.idle = time.AfterFunc(g.after, func() {
		g.mu.Lock()
		err := &DeadlineError{Provider: p.id, Setting: g.key, After: g.after}
		g.mu.Unlock()
		cancel(err)
	})
	g.total = time.AfterFunc(p.deadlines.ProviderTotal, func() {
		g.cutOff(&DeadlineError{Provider: p.id, Setting: "deadlines.providerTotal", After: p.deadlines.ProviderTotal, total: true},
			"went on past its total deadline of "+p.deadlines.ProviderTotal.String())
	})
	return ctx, g
}

// chunk restarts the idle deadline: the server sent a piece of the
// answer.
func (g *guard) chunk() {
	g.mu.Lock()
	g.after, g.key = g.p.deadlines.ProviderIdle, "deadlines.providerIdle"
	g.mu.Unlock()
	g.idle.Reset(g.p.deadlines.ProviderIdle)
}

// cutOff says why in one notice, then ends the stream with err: in that
// order, so the notice is out before the caller sees the error (a timer
// ends the stream from another goroutine).
func (g *guard) cutOff(err error, why string) {
	if g.p.notify != nil {
		g.p.notify(fmt.Sprintf("openai provider %q: the stream %s; cancelled it", g.p.id, why))
	}
	g.cancel(err)
}

// stop releases the timers and the context.
func (g *guard) stop() {
	g.idle.Stop()
	g.total.Stop()
	g.cancel(nil)
}

// body counts r against the cap on one response: past it the stream is
// cut off, and the read fails with the cap's error.
func (g *guard) body(r io.Reader) io.Reader {
	return &capped{r: r, g: g, left: int64(g.p.limits.ProviderResponseMiB) << 20}
}

type capped struct {
	r    io.Reader
	g    *guard
	left int64
	over error
}

func (c *capped) Read(b []byte) (int, error) {
	if c.over != nil {
		return 0, c.over
	}
	n, err := c.r.Read(b)
	if c.left -= int64(n); c.left < 0 {
		mib := c.g.p.limits.ProviderResponseMiB
		c.over = &TooLargeError{Provider: c.g.p.id, MiB: mib}
		c.g.cutOff(c.over, fmt.Sprintf("sent more than %d MiB", mib))
		return 0, c.over
	}
	return n, err
}
