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
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1 // the command or tool reported an error or was denied
	ExitUsage = 2
)

// subcommand is one of bingo's subcommands; the one named "" runs a turn.
type subcommand struct {
	name, args, what string
	flags            bool // takes the flags every subcommand takes
}

var subcommands = []subcommand{
	{"", "PROMPT...", "run a turn; a PROMPT starting with / runs that command", true},
	{"call", "TOOL [JSON]", "run one tool call as a model's call would run", true},
	{"complete", "LINE", "list completions for a partial command line", true},
	{"plugins", "[check DIR | new NAME]", "list plugins: name, version, layer, transport, trust, status, contributions; check DIR checks the plugin in DIR against the contract; new NAME writes a new plugin that passes it", true},
	{"trust", "", "trust this repository's plugins and settings as they are now (or withdraw it)", true},
	{"mcp", "add NAME [-- COMMAND [ARGS...]] | list | remove NAME | import FILE", "add an MCP server to your plugins (--project: to the project's .mcp.json), list them, remove one, or import those of a Claude Desktop, Claude Code, Cursor or VS Code file", true},
	{"help", "[SUBCOMMAND]", "show this usage, or one subcommand's", false},
	{"version", "", "print bingo's version", false},
}

// lookup finds the subcommand name; "" is a turn's.
func lookup(name string) (subcommand, bool) {
	for _, s := range subcommands {
		if s.name == name {
			return s, true
		}
	}
	return subcommand{}, false
}

func (s subcommand) synopsis() string {
	words := []string{"bingo"}
	if s.name != "" {
		words = append(words, s.name)
	}
	if s.flags {
		words = append(words, "[flags]")
	}
	if s.args != "" {
		words = append(words, s.args)
	}
	return strings.Join(words, " ")
}

// ownFlags are the flags of one subcommand only, by name; every other flag
// is taken by every subcommand that takes flags.
var ownFlags = map[string]string{"json": "plugins", "revoke": "trust", "inputs": "plugins", "lang": "plugins", "dir": "plugins", "kit": "plugins",
	"env": "mcp", "project": "mcp", "url": "mcp", "header": "mcp"}

// pluginsForms says which forms of bingo plugins take each of its own
// flags ("" is the list): --lang given to check, or --json to new, is a
// usage error, not a flag quietly ignored.
var pluginsForms = map[string][]string{"json": {"", "check"}, "inputs": {"check"}, "lang": {"new"}, "dir": {"new"}, "kit": {"new"}}

// options are the flags.
type options struct {
	print      bool
	trace      bool
	pluginDirs multi
	cwd        string
	allow      multi
	json       bool
	revoke     bool
	trustDirs  bool // --trust
	version    bool
	pluginsOptions
	mcpOptions
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// flagSet defines every subcommand's flags on one set, so that a flag may
// come anywhere among the arguments, before the subcommand's name or after
// it; which subcommand takes which is checked once they are parsed.
func (o *options) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("bingo", flag.ContinueOnError)
	// Main says what is wrong itself: with the bingo: prefix, and the usage
	// on stdout when it was asked for.
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.print, "print", false, "fold every View to plain text; no prompts, no colour, no progress")
	fs.BoolVar(&o.trace, "trace", false, "write every wire line, both ways, into each plugin's log (also BINGO_TRACE=1)")
	fs.Var(&o.pluginDirs, "plugin-dir", "load plugins from `DIR`, a directory of plugins or one plugin's own, as an extra layer (repeatable)")
	fs.StringVar(&o.cwd, "cwd", "", "the session's working `DIR`")
	fs.Var(&o.allow, "allow", "allow `TOOL` for this run (repeatable; prefix* patterns too)")
	fs.BoolVar(&o.json, "json", false, "print the list of plugins, or check's report, as JSON")
	fs.BoolVar(&o.revoke, "revoke", false, "withdraw your trust in the project")
	fs.BoolVar(&o.trustDirs, "trust", false, "run the plugins of a --plugin-dir, or plugins check's DIR, that lies inside a project you have not trusted, this once, without asking")
	fs.BoolVar(&o.version, "version", false, "print bingo's version, as bingo version does")
	o.pluginsFlags(fs)
	o.mcpFlags(fs)
	return fs
}

// parse parses args with the flags anywhere among them: the flag package
// stops at the first argument that is not a flag, so parsing resumes after
// each. The first "--" ends the flags: what follows it is kept as it is,
// even if it starts with "-" (a flag's value "--" is written --cwd=--). It
// returns the arguments that are not flags, in order, and how many of them
// came before a "--": only those may name a subcommand. On an error
// (flag.ErrHelp too) rest holds the arguments read so far.
func parse(fs *flag.FlagSet, args []string) (rest []string, named int, err error) {
	var after []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, after = args[:i], args[i+1:]
	}
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return rest, len(rest), err
		}
		if args = fs.Args(); len(args) > 0 {
			rest, args = append(rest, args[0]), args[1:]
		}
	}
	return append(rest, after...), len(rest), nil
}

// Main runs the bingo command line and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	fs := o.flagSet()
	rest, named, err := parse(fs, args)
	sub, _ := lookup("")
	if named > 0 && rest[0] != "" {
		if s, ok := lookup(rest[0]); ok {
			sub, rest = s, rest[1:]
		} else if near := nearSubcommand(rest[0]); near != "" {
			// A slip of the keyboard must not become a model request,
			// perhaps a paid one.
			return usageError(stderr, fs, "", "%q is not a subcommand: did you mean bingo %s? (a prompt starting with %q goes after --)", rest[0], near, rest[0])
		}
	}
	if errors.Is(err, flag.ErrHelp) { // -h or --help: the usage of what it follows
		showUsage(stdout, fs, sub.name)
		return ExitOK
	}
	if err != nil {
		return usageError(stderr, fs, sub.name, "%s", flagError(err, fs))
	}
	if o.version {
		if sub.name != "" || len(rest) > 0 || fs.NFlag() > 1 {
			return usageError(stderr, fs, sub.name, "--version takes nothing else")
		}
		fmt.Fprintln(stdout, version())
		return ExitOK
	}
	form := ""
	if (sub.name == "plugins" || sub.name == "mcp") && len(rest) > 0 {
		form = rest[0]
	}
	formsOf := map[string]map[string][]string{"plugins": pluginsForms, "mcp": mcpForms}[sub.name]
	var misplaced string
	fs.Visit(func(f *flag.Flag) {
		owner, own := ownFlags[f.Name]
		forms, byForm := formsOf[f.Name]
		switch {
		case misplaced != "":
		case own && owner != sub.name:
			misplaced = fmt.Sprintf("--%s is a flag of bingo %s only", f.Name, owner)
		case byForm && !slices.Contains(forms, form):
			var names []string
			for _, f := range forms {
				names = append(names, strings.TrimSpace("bingo "+sub.name+" "+f))
			}
			misplaced = fmt.Sprintf("--%s is a flag of %s only", f.Name, strings.Join(names, " and "))
		case !own && !sub.flags:
			misplaced = fmt.Sprintf("%s takes no flags", sub.name)
		}
	})
	if misplaced != "" {
		return usageError(stderr, fs, sub.name, "%s", misplaced)
	}
	switch {
	case sub.name == "" && len(rest) == 0:
		return usageError(stderr, fs, "", "no prompt")
	case sub.name == "call" && (len(rest) < 1 || len(rest) > 2):
		return usageError(stderr, fs, sub.name, "call takes TOOL and at most one JSON argument")
	case sub.name == "complete" && len(rest) != 1:
		return usageError(stderr, fs, sub.name, "complete takes one LINE")
	case sub.name == "plugins" && len(rest) > 0:
		return pluginsSubcommand(o, rest, stdin, stdout, stderr, fs)
	case sub.name == "mcp":
		return mcpSubcommand(o, rest, stdout, stderr, fs)
	case (sub.name == "plugins" || sub.name == "trust" || sub.name == "version") && len(rest) != 0:
		return usageError(stderr, fs, sub.name, "%s takes no arguments", sub.name)
	case sub.name == "help":
		if len(rest) == 0 {
			showUsage(stdout, fs, "")
			return ExitOK
		}
		if s, ok := lookup(rest[0]); ok && rest[0] != "" && len(rest) == 1 {
			showUsage(stdout, fs, s.name)
			return ExitOK
		}
		if len(rest) > 1 {
			return usageError(stderr, fs, sub.name, "help takes one SUBCOMMAND")
		}
		hint := ""
		if near := nearSubcommand(rest[0]); near != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", near)
		}
		return usageError(stderr, fs, sub.name, "there is no subcommand %q%s; there are call, complete, plugins, trust, mcp, help and version", rest[0], hint)
	case sub.name == "version":
		fmt.Fprintln(stdout, version())
		return ExitOK
	}
	var input json.RawMessage
	if sub.name == "call" && len(rest) == 2 {
		input = json.RawMessage(rest[1])
		if err := objectInput(input); err != nil {
			return usageError(stderr, fs, sub.name, "call: the input %v", err)
		}
	}

	r, err := newRun(o, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: %v\n", err)
		return ExitUsage
	}
	if sub.name == "trust" { // starts nothing: it only records a decision
		return r.trust()
	}
	// The second Ctrl-C must stop the plugins before exiting, but the host
	// opens after the interrupts start (opening is interruptible too): the
	// hook finds it through hc once it exists.
	hc := newHostCloser()
	ctx, stop := r.interrupts(func() { hc.quit(quitGrace) })
	defer stop()
	vouched, ok := r.vouchDirs(ctx)
	if !ok {
		return ExitError
	}
	cfg := host.Config{Home: r.home, Cwd: r.cwd, PluginDirs: o.pluginDirs, Allow: o.allow, Notify: r.notice,
		Trace: o.trace || os.Getenv("BINGO_TRACE") == "1", Vouched: vouched}
	if r.interactive {
		cfg.AskTrust = r.AskTrust
	}
	// Say why a first start waits: at once on a terminal, once it is long
	// elsewhere (a log would fill with every first start's line).
	cfg.SlowCompile = r.slowCompile
	if !r.liveProgress {
		cfg.SlowCompileAfter = stillCompilingAfter
	}
	h, err := host.Open(ctx, cfg)
	hc.set(h)
	if err != nil {
		r.fail(err)
		return ExitUsage
	}
	defer hc.close()

	switch sub.name {
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

// objectInput says what is wrong with a tool call's input, if anything: a
// tool's input is a JSON object, and where the JSON breaks is said by line
// and column. (The host refuses the same inputs; here they are a usage
// error, caught before any plugin starts.)
func objectInput(input json.RawMessage) error {
	var v any
	err := json.Unmarshal(input, &v)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		// Offset counts the bytes read, the offending one included; at the
		// end of the input, the place is just past its last byte.
		at := int(syntax.Offset) - 1
		if syntax.Offset >= int64(len(input)) && strings.HasSuffix(err.Error(), "end of JSON input") {
			at = len(input)
		}
		before := string(input[:max(at, 0)])
		line := 1 + strings.Count(before, "\n")
		col := len(before) - strings.LastIndex(before, "\n")
		return fmt.Errorf("is not valid JSON: line %d, column %d: %v", line, col, err)
	}
	if err != nil {
		return fmt.Errorf("is not valid JSON: %v", err)
	}
	// null is no input, which a tool takes as {} (as the host does).
	if kind := protocol.KindOf(input); kind != "an object" && kind != "null" {
		return fmt.Errorf("must be a JSON object, not %s", kind)
	}
	return nil
}

// nearSubcommand is the subcommand word is a slip of the keyboard away
// from, or "". A slip is a letter left out, doubled in or swapped with its
// neighbour (one for a word of five letters or fewer, two beyond); a wrong
// letter counts as two, and a word shorter than four letters is never a
// slip, so that prompts starting "all", "map", "tall" or "hello" stay
// prompts.
func nearSubcommand(word string) string {
	if len(word) < 4 || strings.ContainsFunc(word, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return ""
	}
	slips := 1
	if len(word) > 5 {
		slips = 2
	}
	for _, s := range subcommands {
		if s.name != "" && editDistance(word, s.name) <= slips {
			return s.name
		}
	}
	return ""
}

// editDistance counts the letters inserted, deleted or swapped with their
// neighbour that turn a into b (optimal string alignment), a substituted
// letter counting as two.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 2
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// flagError says in bingo's words what the flag package found wrong: its
// messages spell a flag -name, whatever was typed, where bingo's usage and
// docs spell it --name, and an unknown one is most often a prompt's word,
// unless it is a slip from one of fs's flags.
func flagError(err error, fs *flag.FlagSet) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var near string
		fs.VisitAll(func(f *flag.Flag) {
			if near == "" && len(name) > 2 && editDistance(name, f.Name) <= 1+len(name)/6 {
				near = f.Name
			}
		})
		if near != "" {
			return fmt.Sprintf("unknown flag --%s: did you mean --%s?", name, near)
		}
		return fmt.Sprintf("unknown flag --%s (a PROMPT word starting with - goes after --)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", name)
	}
	return strings.Replace(msg, " for -", " for --", 1)
}

// showUsage writes the usage of the subcommand name, or all of bingo's for
// "": each subcommand, then every flag with its text.
func showUsage(w io.Writer, fs *flag.FlagSet, name string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if name == "" {
		fmt.Fprintln(tw, "usage:")
		for _, s := range subcommands {
			fmt.Fprintf(tw, "  %s\t%s\n", s.synopsis(), s.what)
		}
		fmt.Fprint(tw, "\nFlags may come anywhere among the arguments; -- ends them, so that a PROMPT\nmay start with -.\n")
		flagLines(tw, fs, "", "\nflags:\n")
		fmt.Fprint(tw, "  -h, --help\tshow this usage, or after a subcommand its own\n")
		for _, s := range subcommands[1:] { // the turn's flags are every subcommand's
			flagLines(tw, fs, s.name, fmt.Sprintf("\nbingo %s flags:\n", s.name))
		}
		return
	}
	s, _ := lookup(name)
	fmt.Fprintf(tw, "usage: %s\n  %s\n", s.synopsis(), s.what)
	if s.flags {
		fmt.Fprintln(tw, "flags:")
		flagLines(tw, fs, s.name, "")
		flagLines(tw, fs, "", "")
	}
}

// flagLines writes the flags of the subcommand owner (those of every
// subcommand for ""), one a line, after heading if there are any.
func flagLines(w io.Writer, fs *flag.FlagSet, owner, heading string) {
	fs.VisitAll(func(f *flag.Flag) {
		if ownFlags[f.Name] != owner {
			return
		}
		fmt.Fprint(w, heading)
		heading = ""
		arg, text := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(w, "  --%s%s\t%s\n", f.Name, arg, text)
	})
}

// usageError says on stderr, in one line, what is wrong with the command
// line, and in one more the synopsis of the subcommand name and where its
// whole usage is: a screen of usage would bury the one line that matters.
func usageError(stderr io.Writer, fs *flag.FlagSet, name, format string, args ...any) int {
	fmt.Fprintf(stderr, "bingo: "+format+"\n", args...)
	s, _ := lookup(name)
	help := strings.TrimSpace("bingo help " + name)
	fmt.Fprintf(stderr, "usage: %s (%s for more)\n", s.synopsis(), help)
	return ExitUsage
}

// version is bingo's version as its build recorded it (a release's module
// version, "(devel)" built from a checkout), the plugin protocol it
// speaks, and the Go it was built with.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("bingo %s, plugin protocol %d, %s", v, protocol.Version, runtime.Version())
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
	if err := isDir(cwd); err != nil {
		return nil, fmt.Errorf("--cwd %s: %v", o.cwd, err)
	}
	// A --plugin-dir that is not there would load nothing, silently: a
	// misspelt path must not pass for a directory without plugins.
	for _, d := range o.pluginDirs {
		if err := isDir(pluginDir(cwd, d)); err != nil {
			return nil, fmt.Errorf("--plugin-dir %s: %v", d, err)
		}
	}
	r := &run{o: o, stdin: stdin, stdout: stdout, stderr: stderr, home: home, cwd: cwd}
	_, noColor := os.LookupEnv("NO_COLOR")
	r.color = !o.print && isTerminal(stdout) && !noColor
	r.liveProgress = !o.print && isTerminal(stderr)
	r.interactive = !o.print && isTerminal(stdin) && isTerminal(stderr)
	r.stdout = hushWriter{stdout, &r.hushed}
	r.stderr = hushWriter{stderr, &r.hushed}
	r.prompter = &prompter{in: stdin, out: r.stderr, text: r.stdout, shared: sameFile(stdout, stderr)}
	if f, ok := stdin.(*os.File); ok && r.interactive {
		r.prompter.canRead = terminalReader(f)
	}
	return r, nil
}

// pluginDir is the directory a --plugin-dir names, as manifest.Layers
// takes it: relative to the session's directory.
func pluginDir(cwd, d string) string {
	if !filepath.IsAbs(d) {
		d = filepath.Join(cwd, d)
	}
	return filepath.Clean(d)
}

// vouchDirs asks about each --plugin-dir that lies inside a project the
// person has not trusted (vouch), and returns those the person said to run
// this once; ok is false if one may not run, which vouch has said.
func (r *run) vouchDirs(ctx context.Context) (vouched []string, ok bool) {
	for _, d := range r.o.pluginDirs {
		dir := pluginDir(r.cwd, d)
		ok, untrusted := r.vouch(ctx, "--plugin-dir "+d, dir)
		if !ok {
			return nil, false
		}
		if untrusted {
			vouched = append(vouched, dir)
		}
	}
	return vouched, true
}

// vouch reports whether the plugins in dir, which what names (a
// --plugin-dir, plugins check's DIR), may run with the person's rights.
// Inside a project the person has not trusted (host.UntrustedProject)
// that is their explicit act: --trust, or yes at the terminal; with no one
// to ask and no --trust, vouch says why not and how to run them. untrusted
// reports whether dir lies in such a project.
func (r *run) vouch(ctx context.Context, what, dir string) (ok, untrusted bool) {
	project, why := host.UntrustedProject(r.home, r.cwd, dir, os.Environ())
	switch {
	case project == "":
		return true, false
	case r.o.trustDirs:
		return true, true
	case r.interactive:
		yes, err := r.yesNo(ctx, fmt.Sprintf("%s lies inside %s, %s: its plugins would run with your rights. Run them this once? [y/N] ",
			render.Line(what), render.Line(project), render.Line(why)))
		if err == nil && yes {
			return true, true
		}
		r.fail(fmt.Errorf("%s: not run", what))
		return false, true
	}
	r.fail(fmt.Errorf("%s lies inside %s, %s, and its plugins would run with your rights: pass --trust to run them this once, or run \"bingo trust --cwd %s\" to trust the project",
		what, project, why, project))
	return false, true
}

// isDir says why path is not a directory, or returns nil.
func isDir(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such directory")
	case err != nil:
		return err
	case !st.IsDir():
		return errors.New("not a directory")
	}
	return nil
}

// slowCompile is host.Config.SlowCompile.
func (r *run) slowCompile(plugin string) {
	if r.liveProgress {
		r.prompter.line(r.stderr, fmt.Sprintf("compiling %s (first start)…", render.Line(plugin)))
		return
	}
	r.prompter.line(r.stderr, fmt.Sprintf("bingo: still waiting for %s: compiling its module (first start)…", render.Line(plugin)))
}

// sameFile says whether a and b are one open file (a terminal, or a
// file or pipe given as both stdout and stderr).
func sameFile(a, b io.Writer) bool {
	fa, ok := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok || !ok2 {
		return false
	}
	sa, err := fa.Stat()
	if err != nil {
		return false
	}
	sb, err := fb.Stat()
	return err == nil && os.SameFile(sa, sb)
}

func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// quitGrace bounds how long quitting waits for the plugins to stop before
// bingo exits: the end of stdin first, SIGTERM halfway, SIGKILL at the end
// (host.Quit), so a plugin that ignores both its stdin and SIGTERM is
// still gone when bingo is.
const quitGrace = 2 * time.Second

// interrupts returns the run's context: the first Ctrl-C cancels it (tools
// hear tool/cancel, providers provider/cancel, and the turn ends cleanly);
// a second one says "bingo: quitting", hushes the run, calls quit and
// exits with status 130. SIGTERM and SIGHUP (the terminal went away) quit
// at once, like a second Ctrl-C, exiting 128 + the signal's number. quit
// must return soon: it is what stops the plugins, which live in their own
// process groups and would otherwise outlive bingo.
//
// The returned stop waits for a quit in progress: stopping the plugins
// ends the turn, and the run returning its own status then would race the
// exit that the person asked for.
func (r *run) interrupts(quit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		interrupted := false
		for {
			select {
			case s := <-sig:
				if s == os.Interrupt && !interrupted {
					interrupted = true
					fmt.Fprintln(r.stderr, "\nbingo: interrupted; finishing what is running (Ctrl-C again to quit now)")
					cancel()
					continue
				}
				code := 130
				if s != os.Interrupt {
					code = 128 + int(s.(syscall.Signal))
				}
				if s != syscall.SIGHUP { // no one is left to read it
					fmt.Fprintln(r.stderr, "bingo: quitting")
				}
				r.hushed.Store(true)
				cancel()
				quit()
				exit := r.exit
				if exit == nil {
					exit = os.Exit
				}
				exit(code)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { close(done); <-finished; signal.Stop(sig); cancel() }
}

// hostCloser closes the host once, from whichever asks first: Main on its
// way out or a quit. The host may still be opening (starting its plugins)
// when the quit comes: quit then waits for the opening to end, so plugins
// it started are stopped too.
type hostCloser struct {
	h      atomic.Pointer[host.Host]
	opened chan struct{} // closed once Open has returned, host or not
}

func newHostCloser() *hostCloser { return &hostCloser{opened: make(chan struct{})} }

// set publishes the host Open returned (nil if it failed).
func (c *hostCloser) set(h *host.Host) {
	if h != nil {
		c.h.Store(h)
	}
	close(c.opened)
}

// close closes the host if it is open, as bingo exits: Host.Leave, which
// leaves the end of each exec plugin's stop to its shepherd (Host.Close
// and Leave are one, whichever comes first).
func (c *hostCloser) close() {
	if h := c.h.Load(); h != nil {
		h.Leave()
	}
}

// quit stops the host's plugins within d, however they behave: it waits
// for a host still opening (the run's context is cancelled, so opening
// ends soon), then has the host quit in what is left of d.
func (c *hostCloser) quit(d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.opened:
	case <-t.C:
		return
	}
	if h := c.h.Load(); h != nil {
		h.Quit(time.Until(deadline))
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
	rows := make([]render.ListingRow, 0, len(infos))
	for _, p := range infos {
		// A plugin that speaks the plugin wire, as almost all do, shows its
		// transport alone; an MCP server says so beside it.
		transport := p.Transport
		if p.Protocol == manifest.ProtocolMCP {
			transport += ", protocol mcp"
		}
		trust := p.Trust
		if trust == "" {
			trust = "yours" // the person's own, or a --plugin-dir they named
		}
		// Why it failed or is shadowed goes under its row: however long,
		// it does not widen the others.
		note := ""
		switch {
		case p.Error != "":
			note = p.Status + ": " + p.Error
		case p.ToolDefinitionBytes > 0:
			// What fills the model's context is the person's to see.
			note = fmt.Sprintf("tool definitions: %d bytes a model request (about %d tokens; turn.toolsMax)", p.ToolDefinitionBytes, (p.ToolDefinitionBytes+3)/4)
		}
		rows = append(rows, render.ListingRow{
			Cells: []string{p.Name, p.Version, p.Layer, transport, trust, p.Status, strings.Join(p.Contributes, ", ")},
			Note:  note,
		})
	}
	width := termWidth(r.stdout)
	if width == 0 {
		width = listingWidth
	}
	render.Listing(r.stdout, []string{"NAME", "VERSION", "LAYER", "TRANSPORT", "TRUST", "STATUS", "CONTRIBUTES"}, rows, width)
	return ExitOK
}

// listingWidth is how wide bingo plugins draws its table when stdout is
// not a terminal.
const listingWidth = 100

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
	var old *trust.OldVersionError
	switch {
	case errors.As(rep.MovedWhy, &old):
		fmt.Fprintf(r.stderr, "bingo: %v; it is kept as %s and a new one started\n", old, rep.MovedAside)
	case rep.MovedAside != "":
		fmt.Fprintf(r.stderr, "bingo: your trust file was unreadable; it is kept as %s and a new one started\n", rep.MovedAside)
	}
	fmt.Fprintf(r.stdout, "trusted %s (recorded in %s)\n", rep.Project, rep.Record)
	fmt.Fprintf(r.stdout, "  pinned: every file of each plugin's directory, and each file its entry names inside %s\n", rep.Repository)
	width := termWidth(r.stdout)
	for _, p := range rep.Plugins {
		fmt.Fprintf(r.stdout, "  plugin %s %s (%d files)\n", render.Line(p.Name), p.Digest, len(p.Files))
		writeRuns(r.stdout, "    runs: ", "      ", rep.Runs[p.Name], width)
		for _, f := range sortedKeys(p.Files) {
			fmt.Fprintf(r.stdout, "    %s: %s\n", render.Line(f), render.Line(p.Files[f]))
		}
		for _, f := range p.Outside {
			fmt.Fprintf(r.stdout, "    not pinned, outside the repository: %s\n", render.Line(f))
		}
	}
	fmt.Fprintf(r.stdout, "  settings .bingo/settings.json: %s\n", rep.Settings)
	for _, p := range rep.Skipped {
		r.fail(fmt.Errorf("%v; not trusted (it runs nothing)", p))
	}
	for _, err := range rep.Unpinned {
		r.fail(fmt.Errorf("%v; not trusted", err))
	}
	if len(rep.Unpinned) > 0 {
		return ExitError
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

// call runs one tool call. What went wrong on bingo's side (a refusal, no
// such tool, a plugin that did not answer) is bingo's to say, on stderr;
// the output CallTool returns with it only repeats it for a model. A tool's
// own error answer (isError) is the tool's result, as a model would read
// it: it goes to stdout like any answer, and the exit status is 1.
func (r *run) call(ctx context.Context, h *host.Host, tool string, input json.RawMessage) int {
	out, err := h.CallTool(ctx, sdk.ToolCallRequest{Name: tool, Input: input}, 0, r)
	r.endProgress()
	if err != nil {
		r.fail(err)
		return ExitError
	}
	r.output(out)
	if out.IsError {
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
		// A hint follows its value after a tab, as shells' completion
		// protocols take it; neither may hold a tab of its own.
		if c.Hint != "" {
			fmt.Fprintf(r.stdout, "%s\t%s\n", render.Line(c.Value), render.Line(c.Hint))
			continue
		}
		fmt.Fprintln(r.stdout, render.Line(c.Value))
	}
	return ExitOK
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
