package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// prompter serialises everything written to the person's side (notices,
// progress, questions) and reads their answers, one question at a time.
type prompter struct {
	in  io.Reader
	out io.Writer

	mu       sync.Mutex
	reader   *bufio.Reader
	progress bool // a live progress line is on screen
}

// line writes one line, clearing a live progress line first.
func (p *prompter) line(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress {
		render.ClearProgress(p.out)
		p.progress = false
	}
	fmt.Fprintln(w, s)
}

// ask writes question and reads one line of answer. ctx ending withdraws
// the question (the read goes on in the background and is discarded).
func (p *prompter) ask(ctx context.Context, question string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress {
		render.ClearProgress(p.out)
		p.progress = false
	}
	if p.reader == nil {
		p.reader = bufio.NewReader(p.in)
	}
	fmt.Fprint(p.out, question)
	type answer struct {
		s   string
		err error
	}
	got := make(chan answer, 1)
	go func() {
		s, err := p.reader.ReadString('\n')
		got <- answer{strings.TrimSpace(s), err}
	}()
	select {
	case a := <-got:
		if a.err != nil && a.s == "" {
			return "", host.ErrNoOneToAsk
		}
		return a.s, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", ctx.Err()
	}
}

// Progress implements host.UI.
func (r *run) Progress(tool, tail string) {
	if r.o.print {
		return
	}
	p := r.prompter
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.liveProgress {
		render.Progress(r.stderr, tool+": "+tail)
		p.progress = true
		return
	}
	fmt.Fprintf(r.stderr, "%s: %s\n", tool, tail)
}

// endProgress clears a live progress line once its call has ended.
func (r *run) endProgress() {
	p := r.prompter
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress {
		render.ClearProgress(r.stderr)
		p.progress = false
	}
}

// Ask implements host.UI.
func (r *run) Ask(ctx context.Context, tool, question string) (string, error) {
	if !r.interactive {
		return "", host.ErrNoOneToAsk
	}
	return r.prompter.ask(ctx, fmt.Sprintf("%s asks: %s\n> ", tool, question))
}

// Approve implements host.UI.
func (r *run) Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error) {
	if !r.interactive {
		return false, host.ErrNoOneToAsk
	}
	a, err := r.prompter.ask(ctx, fmt.Sprintf("Run %s %s? (%s) [y/N] ", call.Name, call.Input, why))
	if err != nil {
		return false, err
	}
	a = strings.ToLower(a)
	return a == "y" || a == "yes", nil
}
