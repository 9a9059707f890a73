package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1 // the command or tool reported an error or was denied
	ExitUsage = 2
)

const usage = `usage:
  bingo [flags] PROMPT            run a turn; a PROMPT starting with / runs that command
  bingo call [flags] TOOL [JSON]  run one tool call as a model's call would run
  bingo complete [flags] LINE     list completions for a partial command line
  bingo plugins [flags] [--json]  list plugins: name, version, layer, transport, trust, status, contributions
  bingo trust [--revoke] [--cwd DIR]  trust this repository's plugins and settings as they are now (or withdraw it)
flags:
`

// options are the flags every subcommand takes.
type options struct {
	print      bool
	pluginDirs multi
	cwd        string
	allow      multi
	json       bool
	revoke     bool
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func (o *options) flags(name string, stderr io.Writer, sub string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.print, "print", o.print, "fold every View to plain text; no prompts, no colour, no progress")
	fs.Var(&o.pluginDirs, "plugin-dir", "load plugins from `DIR` as an extra layer (repeatable)")
	fs.StringVar(&o.cwd, "cwd", o.cwd, "the session's working `DIR`")
	fs.Var(&o.allow, "allow", "allow `TOOL` for this run (repeatable; prefix* patterns too)")
	switch sub {
	case "plugins":
		fs.BoolVar(&o.json, "json", false, "print JSON")
	case "trust":
		fs.BoolVar(&o.revoke, "revoke", false, "withdraw your trust in the project")
	}
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return fs
}

// Main runs the bingo command line and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	fs := o.flags("bingo", stderr, "")
	if err := fs.Parse(args); err != nil {
		return usageStatus(err)
	}
	rest := fs.Args()
	sub := ""
	if len(rest) > 0 {
		switch rest[0] {
		case "call", "complete", "plugins", "trust":
			sub = rest[0]
			sfs := o.flags("bingo "+sub, stderr, sub)
			if err := sfs.Parse(rest[1:]); err != nil {
				return usageStatus(err)
			}
			rest = sfs.Args()
		}
	}
	switch {
	case sub == "" && len(rest) == 0:
		fmt.Fprint(stderr, "bingo: no prompt\n"+usage)
		return ExitUsage
	case sub == "call" && (len(rest) < 1 || len(rest) > 2):
		fmt.Fprint(stderr, "bingo call: want TOOL and at most one JSON argument\n")
		return ExitUsage
	case sub == "complete" && len(rest) != 1:
		fmt.Fprint(stderr, "bingo complete: want one LINE\n")
		return ExitUsage
	case (sub == "plugins" || sub == "trust") && len(rest) != 0:
		fmt.Fprintf(stderr, "bingo %s: takes no arguments\n", sub)
		return ExitUsage
	}
	var input json.RawMessage
	if sub == "call" && len(rest) == 2 {
		input = json.RawMessage(rest[1])
		if !json.Valid(input) {
			fmt.Fprintf(stderr, "bingo call: the input is not valid JSON: %s\n", rest[1])
			return ExitUsage
		}
	}

	r, err := newRun(o, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: %v\n", err)
		return ExitUsage
	}
	if sub == "trust" { // starts nothing: it only records a decision
		return r.trust()
	}
	// The second Ctrl-C must stop the plugins before exiting, but the host
	// opens after the interrupts start (opening is interruptible too): the
	// hook finds it through hc once it exists.
	hc := newHostCloser()
	ctx, stop := r.interrupts(func() { closeWithin(hc.forceClose, quitGrace) })
	defer stop()
	cfg := host.Config{Home: r.home, Cwd: r.cwd, PluginDirs: o.pluginDirs, Allow: o.allow, Notify: r.notice}
	if r.interactive {
		cfg.AskTrust = r.AskTrust
	}
	h, err := host.Open(ctx, cfg)
	hc.set(h)
	if err != nil {
		r.fail(err)
		return ExitUsage
	}
	defer hc.close()

	switch sub {
	case "plugins":
		return r.plugins(h)
	case "call":
		return r.call(ctx, h, rest[0], input)
	case "complete":
		return r.complete(ctx, h, rest[0])
	}
	prompt := strings.Join(rest, " ")
	if strings.HasPrefix(prompt, "/") {
		return r.command(ctx, h, prompt)
	}
	return r.turn(ctx, h, prompt)
}

func usageStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// run is one invocation's terminal state.
type run struct {
	o              options
	stdin          io.Reader
	stdout, stderr io.Writer
	home, cwd      string
	color          bool // stdout is a terminal and colour is wanted
	liveProgress   bool // stderr is a terminal: redraw progress in place
	interactive    bool // stdin and stderr are terminals and not --print: someone can answer
	prompter       *prompter
	exit           func(code int) // os.Exit; nil means os.Exit (tests replace it)
	hushed         atomic.Bool    // quitting: stdout and stderr (as hushWriters) say nothing more
}

// hushWriter writes to w until the run is hushed, then drops everything.
// Once the second Ctrl-C has said "bingo: quitting", what the ending run
// would still print (the turn ending, a plugin gone) is noise.
type hushWriter struct {
	w      io.Writer
	hushed *atomic.Bool
}

func (h hushWriter) Write(p []byte) (int, error) {
	if h.hushed.Load() {
		return len(p), nil
	}
	return h.w.Write(p)
}

func newRun(o options, stdin io.Reader, stdout, stderr io.Writer) (*run, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("no home directory: %v", err)
	}
	cwd := o.cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if cwd, err = filepath.Abs(cwd); err != nil {
		return nil, err
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--cwd %s: not a directory", o.cwd)
	}
	r := &run{o: o, stdin: stdin, stdout: stdout, stderr: stderr, home: home, cwd: cwd}
	_, noColor := os.LookupEnv("NO_COLOR")
	r.color = !o.print && isTerminal(stdout) && !noColor
	r.liveProgress = !o.print && isTerminal(stderr)
	r.interactive = !o.print && isTerminal(stdin) && isTerminal(stderr)
	r.stdout = hushWriter{stdout, &r.hushed}
	r.stderr = hushWriter{stderr, &r.hushed}
	r.prompter = &prompter{in: stdin, out: r.stderr}
	return r, nil
}

func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// quitGrace bounds how long the second Ctrl-C waits for the plugins to
// stop before bingo exits anyway: the person asked to quit now.
const quitGrace = 2 * time.Second

// interrupts returns the run's context: the first Ctrl-C cancels it (tools
// hear tool/cancel, providers provider/cancel, and the turn ends cleanly);
// a second one says "bingo: quitting", hushes the run, calls quit and
// exits with status 130. quit must return soon: it is what stops the
// plugins, which live in their own process groups and would otherwise
// outlive bingo.
//
// The returned stop waits for a quit in progress: stopping the plugins
// ends the turn, and the run returning its own status then would race the
// exit that the person asked for.
func (r *run) interrupts(quit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-sig:
			fmt.Fprintln(r.stderr, "\nbingo: interrupted; finishing what is running (Ctrl-C again to quit now)")
			cancel()
		case <-done:
			return
		}
		select {
		case <-sig:
			fmt.Fprintln(r.stderr, "bingo: quitting")
			r.hushed.Store(true)
			quit()
			exit := r.exit
			if exit == nil {
				exit = os.Exit
			}
			exit(130)
		case <-done:
		}
	}()
	return ctx, func() { close(done); <-finished; signal.Stop(sig); cancel() }
}

// hostCloser closes the host once, from whichever asks first: Main on its
// way out or the second Ctrl-C. The host may still be opening (starting
// its plugins) when the second Ctrl-C comes: forceClose then waits for the
// opening to end, so plugins it started are stopped too.
type hostCloser struct {
	h      atomic.Pointer[host.Host]
	opened chan struct{} // closed once Open has returned, host or not
	once   sync.Once
}

func newHostCloser() *hostCloser { return &hostCloser{opened: make(chan struct{})} }

// set publishes the host Open returned (nil if it failed).
func (c *hostCloser) set(h *host.Host) {
	if h != nil {
		c.h.Store(h)
	}
	close(c.opened)
}

// close closes the host if it is open. A second caller waits for the
// first one's Close to finish.
func (c *hostCloser) close() {
	if h := c.h.Load(); h != nil {
		c.once.Do(func() { h.Close() })
	}
}

// forceClose is close for the second Ctrl-C: it first waits for a host
// still opening (the caller bounds the whole wait).
func (c *hostCloser) forceClose() {
	<-c.opened
	c.close()
}

// closeWithin runs f in a goroutine and returns when f has returned
// or after d, whichever is first. The goroutine is left behind on timeout:
// the caller is about to exit the process.
func closeWithin(f func(), d time.Duration) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// notice prints a host's or plugin's notice. The message is the plugin's
// own text: it is kept on one line so it cannot pass for bingo's output.
func (r *run) notice(n bridge.Notice) {
	r.prompter.line(r.stderr, render.Line("bingo: "+n.String()))
}

func (r *run) view(v sdk.View) {
	if r.o.print {
		render.Fold(r.stdout, v)
		return
	}
	render.View(r.stdout, v, render.Options{Color: r.color, Width: termWidth(r.stdout)})
}

func termWidth(w io.Writer) int {
	if h, ok := w.(hushWriter); ok {
		w = h.w
	}
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 0
}

// output prints a tool's output: the text the model reads, then the View
// the person sees.
func (r *run) output(out sdk.ToolOutput) {
	if text := out.Text(); text != "" {
		fmt.Fprintln(r.stdout, render.Clean(text))
	}
	if out.Display != nil {
		r.view(*out.Display)
	}
}

func (r *run) plugins(h *host.Host) int {
	infos := h.Plugins()
	if r.o.json {
		if infos == nil {
			infos = []host.PluginInfo{}
		}
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(infos)
		return ExitOK
	}
	if len(infos) == 0 {
		fmt.Fprintln(r.stdout, "no plugins (install one in ~/.bingo/plugins/<name>/ or pass --plugin-dir)")
		return ExitOK
	}
	tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tLAYER\tTRANSPORT\tTRUST\tSTATUS\tCONTRIBUTES")
	for _, p := range infos {
		status := p.Status
		if p.Error != "" {
			status += ": " + p.Error
		}
		trust := p.Trust
		if trust == "" {
			trust = "yours" // the person's own, or a --plugin-dir they named
		}
		// Names, versions and errors come from manifests and plugins.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", render.Line(p.Name), render.Line(p.Version), render.Line(p.Layer),
			render.Line(p.Transport), render.Line(trust), render.Line(status), render.Line(strings.Join(p.Contributes, ", ")))
	}
	tw.Flush()
	return ExitOK
}

// trust records (or with --revoke withdraws) the person's trust in the
// project around the working directory, and prints what it trusted.
func (r *run) trust() int {
	if r.o.revoke {
		project, was, err := host.Revoke(r.home, r.cwd)
		if err != nil {
			r.fail(err)
			return ExitError
		}
		if !was {
			fmt.Fprintf(r.stdout, "%s was not trusted\n", project)
			return ExitOK
		}
		fmt.Fprintf(r.stdout, "no longer trusted: %s\n", project)
		return ExitOK
	}
	rep, err := host.Trust(r.home, r.cwd)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	if rep.MovedAside != "" {
		fmt.Fprintf(r.stderr, "bingo: your trust file was unreadable; it is kept as %s and a new one started\n", rep.MovedAside)
	}
	fmt.Fprintf(r.stdout, "trusted %s (recorded in %s)\n", rep.Project, rep.Record)
	for _, p := range rep.Plugins {
		fmt.Fprintf(r.stdout, "  plugin %s %s\n", render.Line(p.Name), p.Digest)
		for _, f := range sortedKeys(p.Files) {
			fmt.Fprintf(r.stdout, "    %s: %s\n", render.Line(f), render.Line(p.Files[f]))
		}
	}
	fmt.Fprintf(r.stdout, "  settings .bingo/settings.json: %s\n", rep.Settings)
	for _, p := range rep.Skipped {
		r.fail(fmt.Errorf("%v; not trusted (it runs nothing)", p))
	}
	return ExitOK
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (r *run) call(ctx context.Context, h *host.Host, tool string, input json.RawMessage) int {
	out, err := h.CallTool(ctx, sdk.ToolCallRequest{Name: tool, Input: input}, 0, r)
	r.endProgress()
	if r.refused(err) {
		return ExitError
	}
	r.output(out)
	if err != nil || out.IsError {
		return ExitError
	}
	return ExitOK
}

func (r *run) complete(ctx context.Context, h *host.Host, line string) int {
	cs, err := h.Complete(ctx, line)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	for _, c := range cs {
		fmt.Fprintln(r.stdout, render.Line(c.Value))
	}
	return ExitOK
}

// refused reports whether err is a refusal of the call (denied by the
// gate or blocked by a hook), and if so says so on stderr.
func (r *run) refused(err error) bool {
	var denied *host.DeniedError
	var blocked *host.BlockedError
	if errors.As(err, &denied) || errors.As(err, &blocked) {
		r.fail(err)
		return true
	}
	return false
}

// fail reports err on one line of stderr. An error's message may carry a
// plugin's or hook's words (a reason, an RPC error), so it is cleaned.
func (r *run) fail(err error) {
	r.prompter.line(r.stderr, render.Line("bingo: "+err.Error()))
}

func (r *run) command(ctx context.Context, h *host.Host, line string) int {
	out, err := h.RunCommand(ctx, line)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	if out.Kind == sdk.OutcomePrompt {
		return r.turn(ctx, h, out.Prompt)
	}
	return r.outcome(strings.SplitN(line, " ", 2)[0], out)
}

// outcome shows what the command name answered (any kind but a prompt).
// Its text and message are the plugin's: cleaned like a tool's output.
func (r *run) outcome(name string, out sdk.CommandOutcome) int {
	name = render.Line(name)
	switch out.Kind {
	case sdk.OutcomeView:
		if out.View != nil {
			r.view(*out.View)
		}
	case sdk.OutcomeText:
		fmt.Fprintln(r.stdout, render.Clean(out.Text))
	case sdk.OutcomeError:
		fmt.Fprintf(r.stderr, "bingo: %s: %s\n", name, render.Line(out.Message))
		return ExitError
	case sdk.OutcomeNone, "":
	default:
		fmt.Fprintf(r.stderr, "bingo: %s answered an outcome of unknown kind %q\n", name, out.Kind)
		return ExitError
	}
	return ExitOK
}
