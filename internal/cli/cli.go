package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1 // the command or tool reported an error or was denied
	ExitUsage = 2
)

// subcommand is one of bingo's subcommands; the one named "" runs a turn.
// Main checks what the table says (its flags, how many arguments) before
// it calls run, so a run function meets only a well-formed command line.
type subcommand struct {
	name, args, what string
	flags            bool // takes the flags every subcommand takes
	// own are its own flags, by name, each with the forms (its first
	// argument, "" for none) that take it; nil forms: every form. --lang
	// given to plugins check, or --json to plugins new, is a usage error,
	// not a flag quietly ignored.
	own map[string][]string
	// min and max bound how many arguments it takes (max < 0: no bound);
	// arity is the usage error for another number.
	min, max int
	arity    string
	run      func(c *invocation) int
}

// subcommands is filled in init: their run functions reach the table
// (usage errors, help), which a package variable's initializer may not.
var subcommands []subcommand

func init() {
	subcommands = []subcommand{
		{name: "", args: "PROMPT...", what: "run a turn; a PROMPT starting with / runs that command", flags: true,
			min: 1, max: -1, arity: "no prompt", run: runTurn},
		{name: "call", args: "TOOL [JSON]", what: "run one tool call as a model's call would run", flags: true,
			min: 1, max: 2, arity: "call takes TOOL and at most one JSON argument", run: runCall},
		{name: "complete", args: "LINE", what: "list completions for a partial command line", flags: true,
			min: 1, max: 1, arity: "complete takes one LINE", run: runComplete},
		{name: "plugins", args: "[check DIR | new NAME]", what: "list plugins: name, version, layer, transport, trust, status, contributions; check DIR checks the plugin in DIR against the contract; new NAME writes a new plugin that passes it", flags: true,
			own: map[string][]string{"json": {"", "check"}, "inputs": {"check"}, "lang": {"new"}, "dir": {"new"}, "kit": {"new"}},
			max: -1, run: runPlugins},
		{name: "trust", what: "trust this repository's plugins and settings as they are now (or withdraw it)", flags: true,
			own: map[string][]string{"revoke": nil}, arity: "trust takes no arguments", run: runTrust},
		{name: "mcp", args: "add NAME [-- COMMAND [ARGS...]] | list | remove NAME | import FILE | login NAME | logout NAME", what: "add an MCP server to your plugins (--project: to the project's .mcp.json), list them, remove one, import those of a Claude Desktop, Claude Code, Cursor or VS Code file, or authorize bingo with a remote one (login) and forget that (logout)", flags: true,
			own: map[string][]string{"env": {"add"}, "project": {"add", "remove"}, "url": {"add"}, "header": {"add"}},
			max: -1, run: runMCP},
		{name: "help", args: "[SUBCOMMAND]", what: "show this usage, or one subcommand's",
			max: 1, arity: "help takes one SUBCOMMAND", run: runHelp},
		{name: "version", what: "print bingo's version",
			arity: "version takes no arguments", run: runVersion},
	}
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

// ownerOf is the subcommand whose own flag name is, or "" for a flag every
// subcommand takes.
func ownerOf(name string) string {
	for _, s := range subcommands {
		if _, ok := s.own[name]; ok {
			return s.name
		}
	}
	return ""
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

// misplaced says which flag set on fs this subcommand does not take with
// rest as its arguments, or "".
func (s subcommand) misplaced(fs *flag.FlagSet, rest []string) string {
	form := ""
	if len(rest) > 0 {
		form = rest[0]
	}
	var why string
	fs.Visit(func(f *flag.Flag) {
		owner := ownerOf(f.Name)
		forms, own := s.own[f.Name]
		switch {
		case why != "":
		case owner != "" && owner != s.name:
			why = fmt.Sprintf("--%s is a flag of bingo %s only", f.Name, owner)
		case own && forms != nil && !slices.Contains(forms, form):
			var names []string
			for _, f := range forms {
				names = append(names, strings.TrimSpace("bingo "+s.name+" "+f))
			}
			why = fmt.Sprintf("--%s is a flag of %s only", f.Name, strings.Join(names, " and "))
		case owner == "" && !s.flags:
			why = fmt.Sprintf("%s takes no flags", s.name)
		}
	})
	return why
}

// invocation is one command line, parsed and checked against its
// subcommand's row.
type invocation struct {
	o              options
	sub            subcommand
	rest           []string // the arguments after the subcommand's name
	stdin          io.Reader
	stdout, stderr io.Writer
	fs             *flag.FlagSet
}

// usageError is usageError for this invocation's subcommand.
func (c *invocation) usageError(format string, args ...any) int {
	return usageError(c.stderr, c.fs, c.sub.name, format, args...)
}

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
	c := &invocation{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := c.o.flagSet()
	c.fs = fs
	rest, named, err := parse(fs, args)
	c.sub, _ = lookup("")
	if named > 0 && rest[0] != "" {
		if s, ok := lookup(rest[0]); ok {
			c.sub, rest = s, rest[1:]
		} else if near := nearSubcommand(rest[0]); near != "" {
			// A slip of the keyboard must not become a model request,
			// perhaps a paid one.
			return usageError(stderr, fs, "", "%q is not a subcommand: did you mean bingo %s? (a prompt starting with %q goes after --)", rest[0], near, rest[0])
		}
	}
	c.rest = rest
	if errors.Is(err, flag.ErrHelp) { // -h or --help: the usage of what it follows
		showUsage(stdout, fs, c.sub.name)
		return ExitOK
	}
	if err != nil {
		return c.usageError("%s", flagError(err, fs))
	}
	if c.o.version {
		if c.sub.name != "" || len(rest) > 0 || fs.NFlag() > 1 {
			return c.usageError("--version takes nothing else")
		}
		return runVersion(c)
	}
	if why := c.sub.misplaced(fs, rest); why != "" {
		return c.usageError("%s", why)
	}
	if len(rest) < c.sub.min || (c.sub.max >= 0 && len(rest) > c.sub.max) {
		return c.usageError("%s", c.sub.arity)
	}
	return c.sub.run(c)
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
	if _, kind, ok := protocol.ToolInput(input); !ok {
		return fmt.Errorf("must be a JSON object, not %s", kind)
	}
	return nil
}

// runVersion is bingo version (and --version).
func runVersion(c *invocation) int {
	fmt.Fprintln(c.stdout, version())
	return ExitOK
}

// runHelp is bingo help [SUBCOMMAND].
func runHelp(c *invocation) int {
	if len(c.rest) == 0 {
		showUsage(c.stdout, c.fs, "")
		return ExitOK
	}
	if s, ok := lookup(c.rest[0]); ok && c.rest[0] != "" {
		showUsage(c.stdout, c.fs, s.name)
		return ExitOK
	}
	hint := ""
	if near := nearSubcommand(c.rest[0]); near != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", near)
	}
	return c.usageError("there is no subcommand %q%s; there are call, complete, plugins, trust, mcp, help and version", c.rest[0], hint)
}

// runTrust is bingo trust: it starts nothing, it only records a decision.
func runTrust(c *invocation) int {
	r, err := newRun(c.o, c.stdin, c.stdout, c.stderr)
	if err != nil {
		fmt.Fprintf(c.stderr, "bingo: %v\n", err)
		return ExitUsage
	}
	return r.trust()
}

// runMCP is bingo mcp's forms, which start nothing.
func runMCP(c *invocation) int {
	return mcpSubcommand(c.o, c.rest, c.stdout, c.stderr, c.fs)
}

// runPlugins is bingo plugins: the list, or its check and new forms.
func runPlugins(c *invocation) int {
	if len(c.rest) > 0 {
		return pluginsSubcommand(c.o, c.rest, c.stdin, c.stdout, c.stderr, c.fs)
	}
	return c.withHost(func(_ context.Context, r *run, h *host.Host) int { return r.plugins(h) })
}

// runCall is bingo call TOOL [JSON]. The input is checked before any
// plugin starts.
func runCall(c *invocation) int {
	tool := c.rest[0]
	var input json.RawMessage
	if len(c.rest) == 2 {
		input = json.RawMessage(c.rest[1])
		if err := objectInput(input); err != nil {
			return c.usageError("call: the input %v", err)
		}
	}
	return c.withHost(func(ctx context.Context, r *run, h *host.Host) int { return r.call(ctx, h, tool, input) })
}

// runComplete is bingo complete LINE.
func runComplete(c *invocation) int {
	return c.withHost(func(ctx context.Context, r *run, h *host.Host) int { return r.complete(ctx, h, c.rest[0]) })
}

// runTurn is bingo PROMPT...: a turn, or the command a PROMPT starting
// with / names.
func runTurn(c *invocation) int {
	prompt := strings.Join(c.rest, " ")
	return c.withHost(func(ctx context.Context, r *run, h *host.Host) int {
		if strings.HasPrefix(prompt, "/") {
			return r.command(ctx, h, prompt)
		}
		return r.turn(ctx, h, prompt)
	})
}

// withHost opens the host (after asking about any --plugin-dir inside an
// untrusted project), runs do with it, and closes it.
func (c *invocation) withHost(do func(ctx context.Context, r *run, h *host.Host) int) int {
	r, err := newRun(c.o, c.stdin, c.stdout, c.stderr)
	if err != nil {
		fmt.Fprintf(c.stderr, "bingo: %v\n", err)
		return ExitUsage
	}
	// The second Ctrl-C must stop the plugins before exiting, but the host
	// opens after the interrupts start (opening is interruptible too): the
	// hook finds it through hc once it exists.
	hc := newHostCloser()
	ctx, stop := r.interrupts(func() { hc.quit(quitGrace) })
	defer stop()
	thisRun, ok := r.dirsToRun(ctx)
	if !ok {
		return ExitError
	}
	cfg := host.Config{Home: r.home, Cwd: r.cwd, PluginDirs: c.o.pluginDirs, Allow: c.o.allow, Notify: r.notice,
		Trace: c.o.trace || os.Getenv("BINGO_TRACE") == "1", TrustedThisRun: thisRun, Terminal: r.interactive, Stderr: c.stderr}
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
	return do(ctx, r, h)
}
