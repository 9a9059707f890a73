package cli

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

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
		if ownerOf(f.Name) != owner {
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
