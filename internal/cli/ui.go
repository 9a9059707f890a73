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
//
// The person's input is read by one goroutine per prompter (read), started
// by the first question and ending at EOF of in. A question takes the next
// line that goroutine read; a withdrawn question leaves the reader alone,
// so the line the person types next answers the next question instead of
// vanishing into a reader nobody listens to any more, and no two reads of
// in ever run at once. The goroutine is owned by the process, not by a
// question or a run: a read of stdin cannot be interrupted (os.Stdin has
// no deadline on a terminal or pipe), so it ends only when stdin does,
// which for bingo is at the latest when the process exits.
type prompter struct {
	in  io.Reader
	out io.Writer

	// text is where the model's answer streams (stdout). shared says text
	// and out reach one screen or file (a terminal, or 2>&1): then
	// anything written to out first ends a line of the answer left open,
	// which a progress line's \r\e[2K would otherwise erase and anything
	// else would glue onto.
	text   io.Writer
	shared bool

	mu       sync.Mutex
	lines    chan string // the person's lines, closed at EOF; nil until the first question
	progress bool        // a live progress line is on screen
	textOpen bool        // the model's text so far does not end its line
}

// showText writes more of the model's answer.
func (p *prompter) showText(delta string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress {
		render.ClearProgress(p.out)
		p.progress = false
	}
	if delta != "" {
		p.textOpen = !strings.HasSuffix(delta, "\n")
	}
	fmt.Fprint(p.text, delta)
}

// endText ends the line of the model's answer, if one is open: the next
// thing on stdout (a View, the next step's text) starts a line of its own.
func (p *prompter) endText() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endTextLocked()
}

func (p *prompter) endTextLocked() {
	if p.textOpen {
		fmt.Fprintln(p.text)
		p.textOpen = false
	}
}

// toOut readies out for a line of bingo's own (p.mu held): a live progress
// line is cleared, and an open line of the answer on the same screen ended.
func (p *prompter) toOut() {
	if p.progress {
		render.ClearProgress(p.out)
		p.progress = false
	}
	if p.shared {
		p.endTextLocked()
	}
}

// line writes one line, clearing a live progress line first.
func (p *prompter) line(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toOut()
	fmt.Fprintln(w, s)
}

// ask writes question and returns the person's next line, trimmed. ctx
// ending withdraws the question (ctx.Err()); the person's input having
// ended is host.ErrNoOneToAsk.
func (p *prompter) ask(ctx context.Context, question string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toOut()
	if p.lines == nil {
		p.lines = make(chan string)
		go read(p.in, p.lines)
	}
	fmt.Fprint(p.out, question)
	select {
	case s, ok := <-p.lines:
		if !ok {
			return "", host.ErrNoOneToAsk
		}
		return s, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", ctx.Err()
	}
}

// read sends each line of in, trimmed, to lines until in ends, then closes
// lines. A last line without a newline still counts. The channel is
// unbuffered: at most one line is read ahead of the question it answers.
func read(in io.Reader, lines chan<- string) {
	defer close(lines)
	br := bufio.NewReader(in)
	for {
		s, err := br.ReadString('\n')
		s = strings.TrimSpace(s)
		if err == nil || s != "" {
			lines <- s
		}
		if err != nil {
			return
		}
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
	if p.shared {
		p.endTextLocked()
	}
	if r.liveProgress {
		render.Progress(r.stderr, tool, tail)
		p.progress = true
		return
	}
	fmt.Fprintf(r.stderr, "%s: %s\n", render.Line(tool), render.Line(tail))
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
	// Both come from the plugin: on one line each, so that the question
	// cannot erase "X asks:" or draw a prompt of its own.
	return r.prompter.ask(ctx, fmt.Sprintf("%s asks: %s\n> ", render.Line(tool), render.Line(question)))
}

// Approve implements host.UI.
func (r *run) Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error) {
	if !r.interactive {
		return false, host.ErrNoOneToAsk
	}
	// The name and input are the model's, why may be a hook's: none of them
	// may redraw the prompt the person answers.
	return r.yesNo(ctx, fmt.Sprintf("Run %s %s? (%s) [y/N] ",
		render.Line(call.Name), render.Line(string(call.Input)), render.Line(why)))
}

// AskTrust is host.Config.AskTrust on a terminal: the first run in an
// untrusted project with exec plugins asks once whether to trust it.
func (r *run) AskTrust(ctx context.Context, q host.TrustQuestion) (bool, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "This repository (%s) wants to run, with your rights:\n", render.Line(q.Project))
	for _, p := range q.Plugins { // a manifest's words: one line each
		fmt.Fprintf(&b, "  %s\n", render.Line(p))
	}
	b.WriteString("Trust it? [y/N] ")
	return r.yesNo(ctx, b.String())
}

// yesNo asks question and reports whether the person answered y or yes.
func (r *run) yesNo(ctx context.Context, question string) (bool, error) {
	a, err := r.prompter.ask(ctx, question)
	if err != nil {
		return false, err
	}
	a = strings.ToLower(a)
	return a == "y" || a == "yes", nil
}
