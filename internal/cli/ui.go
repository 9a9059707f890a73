package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// prompter serialises everything written to the person's side (notices,
// progress, questions) and reads their answers, one question at a time.
//
// The person's input is read only while a question waits for it: one read
// of a line at a time, in a goroutine (pending) that ends with that line.
// A read of in cannot be interrupted (os.Stdin has no deadline on a
// terminal or pipe), so a withdrawn question leaves its read running, and
// the line the person types next answers the next question instead of
// vanishing; no two reads of in ever run at once. Between questions
// nothing reads a terminal: a bingo put in the background (Ctrl-Z, bg)
// is not stopped for reading it.
type prompter struct {
	in  io.Reader
	out io.Writer
	// canRead, if set, says why in cannot be read now (nil when it can):
	// it is asked before each question is shown.
	canRead func() error

	// text is where the model's answer streams (stdout). shared says text
	// and out reach one screen or file (a terminal, or 2>&1): then
	// anything written to out first ends a line of the answer left open,
	// which a progress line's \r\e[2K would otherwise erase and anything
	// else would glue onto.
	text   io.Writer
	shared bool

	mu       sync.Mutex
	br       *bufio.Reader // in, buffered; nil until the first question
	pending  chan answer   // the read in flight, nil when there is none
	ended    bool          // in has ended: no one is left to ask
	progress bool          // a live progress line is on screen
	textOpen bool          // the model's text so far does not end its line
	spoke    bool          // the running tool call has shown progress of its own
}

// answer is one line the person typed, trimmed; err is the read's error
// (io.EOF at the end of in), with or without a last line.
type answer struct {
	line string
	err  error
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
// ended, or being unreadable now, is agent.ErrNoOneToAsk.
func (p *prompter) ask(ctx context.Context, question string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return "", agent.ErrNoOneToAsk
	}
	if p.canRead != nil {
		if err := p.canRead(); err != nil {
			return "", err
		}
	}
	p.toOut()
	fmt.Fprint(p.out, question)
	select {
	case a := <-p.read():
		p.pending = nil
		if a.err != nil {
			// A last line without a newline still counts; after it, or
			// after an error, in has nothing more to say.
			p.ended = true
			if a.line == "" {
				return "", agent.ErrNoOneToAsk
			}
		}
		return a.line, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", ctx.Err()
	}
}

// read returns the read in flight, starting one if there is none: a
// goroutine that reads one line and ends.
func (p *prompter) read() <-chan answer {
	if p.pending == nil {
		if p.br == nil {
			p.br = bufio.NewReader(p.in)
		}
		ch := make(chan answer, 1)
		go func(br *bufio.Reader) {
			s, err := br.ReadString('\n')
			ch <- answer{strings.TrimSpace(s), err}
		}(p.br)
		p.pending = ch
	}
	return p.pending
}

// errBackground answers every question while bingo cannot read its
// terminal.
var errBackground = fmt.Errorf("%w: bingo is in the background of its terminal and cannot read it (run with &, or by timeout without --foreground)", agent.ErrNoOneToAsk)

// terminalReader is prompter.canRead for a terminal: the terminal may be
// read only by its foreground process group. A read from any other group
// stops the whole process (SIGTTIN) until someone brings it to the
// foreground, which under timeout(1), whose command runs in a group of
// its own, no one ever does: bingo hung. So bingo asks only while it is
// in the foreground, and otherwise refuses at once.
func terminalReader(f *os.File) func() error {
	return func() error {
		pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
		if err != nil || pgrp != unix.Getpgrp() {
			return errBackground
		}
		return nil
	}
}

// Progress implements agent.UI.
func (r *run) Progress(tool, tail string) {
	if r.o.print {
		return
	}
	p := r.prompter
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spoke = true
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

// A tool call working in silence must not look hung: on a terminal, one
// that has shown nothing of its own for quietAfter gets a live line of its
// elapsed time; elsewhere, one still running after stillWaitingAfter gets
// one line saying bingo waits for it. A wasm plugin's first compilation
// says so at once on a terminal, and elsewhere once it has taken
// stillCompilingAfter (a large module's first compile takes seconds).
const (
	quietAfter          = 2 * time.Second
	stillWaitingAfter   = 5 * time.Second
	stillCompilingAfter = 10 * time.Second
)

// Started implements agent.CallWatcher.
func (r *run) Started(tool string) (ended func()) {
	p := r.prompter
	p.mu.Lock()
	p.spoke = false
	p.mu.Unlock()
	start := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if !r.liveProgress {
			wait := time.NewTimer(stillWaitingAfter)
			defer wait.Stop()
			select {
			case <-stop:
			case <-wait.C:
				p.line(r.stderr, fmt.Sprintf("bingo: still waiting for %s (%s so far)…", render.Line(tool), stillWaitingAfter))
			}
			return
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			elapsed := time.Since(start).Round(time.Second)
			p.mu.Lock()
			if !p.spoke && elapsed >= quietAfter {
				if p.shared {
					p.endTextLocked()
				}
				render.Progress(r.stderr, tool, fmt.Sprintf("running… %s", elapsed))
				p.progress = true
			}
			p.mu.Unlock()
		}
	}()
	return func() {
		close(stop)
		<-done
	}
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

// What a plugin, a model or a hook may show beside one of bingo's own
// prompts (docs/plugins.md states these numbers): enough for any honest
// question, too little to push the prompt's own words off a screen.
const (
	questionLines = 10   // a tool's question (an MCP server's elicitation too)
	questionChars = 1000 // in all its lines
	inputChars    = 1000 // a call's input, in the permission prompt
	reasonChars   = 300  // why bingo asks (a rule, a hook's reason, a tool's claims)
	trustChars    = 200  // the project's path in the trust prompt (its plugins' command lines are shown whole)
)

// Ask implements agent.UI. The question is the plugin's: its lines are
// indented under bingo's own line saying who asks, capped and squeezed
// (render.Block), and the prompt line itself names the asker again, so
// whatever the question says above it, the line the person answers on
// says where the answer goes.
func (r *run) Ask(ctx context.Context, tool, question string) (string, error) {
	if !r.interactive {
		return "", agent.ErrNoOneToAsk
	}
	asker := askerOf(tool)
	var b strings.Builder
	fmt.Fprintf(&b, "%s, running %s, asks:\n", asker, render.Line(tool))
	for _, l := range render.Block(question, questionLines, questionChars) {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "%s asks (answer goes to it) > ", asker)
	return r.prompter.ask(ctx, b.String())
}

// askerOf names who asks through tool: the plugin that offers it.
func askerOf(tool string) string {
	if plugin, _, ok := proxy.SplitToolName(tool); ok {
		return "plugin " + render.Line(plugin)
	}
	return "tool " + render.Line(tool)
}

// Approve implements agent.UI.
func (r *run) Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error) {
	if !r.interactive {
		return false, agent.ErrNoOneToAsk
	}
	// The name and input are the model's, why may be a hook's: none of them
	// may redraw the prompt the person answers, nor fill the screen.
	return r.yesNo(ctx, fmt.Sprintf("Run %s %s? (%s) [y/N] ",
		render.Line(call.Name), render.Brief(string(call.Input), inputChars), render.Brief(why, reasonChars)))
}

// AskTrust is host.Config.AskTrust on a terminal: the first run in an
// untrusted project with exec plugins asks once whether to trust it,
// showing every command line it would run whole (writeRuns).
func (r *run) AskTrust(ctx context.Context, q host.TrustQuestion) (bool, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "This repository (%s) wants to run, with your rights:\n", render.Brief(q.Project, trustChars))
	width := termWidth(r.stderr)
	for _, p := range q.Plugins {
		writeRuns(&b, "  "+render.Line(p.Name)+": ", "      ", p, width)
	}
	b.WriteString("Trust it? [y/N] ")
	return r.yesNo(ctx, b.String())
}

// writeRuns writes what one plugin runs, a repository's words, for the
// person to judge: head, then its command line whole however long
// (render.Whole: blanks squeezed, what would not show marked, wrapped to
// width, or to wholeWidth when width is 0, never cut), its later lines
// and then the variables it reads indented by indent.
func writeRuns(w io.Writer, head, indent string, p host.Runs, width int) {
	if width <= 0 {
		width = wholeWidth
	}
	for i, l := range render.Whole(p.Line, width-max(len(head), len(indent))) {
		if i == 0 {
			fmt.Fprintf(w, "%s%s\n", head, l)
			continue
		}
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
	if len(p.Vars) > 0 {
		vars := make([]string, len(p.Vars))
		for i, v := range p.Vars {
			vars[i] = "${" + v + "}"
		}
		fmt.Fprintf(w, "%sreads %s from the environment your settings give it\n", indent, strings.Join(vars, ", "))
	}
	if p.Asks != "" {
		fmt.Fprintf(w, "%sasks the sandbox for: %s\n", indent, render.Line(p.Asks))
	}
}

// wholeWidth is how wide writeRuns wraps a command line when the output
// is not a terminal.
const wholeWidth = 100

// yesNo asks question and reports whether the person answered y or yes.
func (r *run) yesNo(ctx context.Context, question string) (bool, error) {
	a, err := r.prompter.ask(ctx, question)
	if err != nil {
		return false, err
	}
	a = strings.ToLower(a)
	return a == "y" || a == "yes", nil
}
