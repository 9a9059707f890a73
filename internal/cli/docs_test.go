package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// cliDoc is the command line's reference, for people.
const cliDoc = "../../docs/cli.md"

// docs/cli.md names every subcommand by its synopsis, every flag with its
// argument and the text the usage gives it, every exit status, and every
// environment variable this package reads: a flag or subcommand added
// here without a word there fails.
func TestTheReferenceHasEverything(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lines := strings.Split(doc, "\n")
	for _, s := range subcommands {
		if want := "`" + s.synopsis() + "`"; !strings.Contains(doc, want) {
			t.Errorf("%s: no %s", cliDoc, want)
		}
	}
	var o options
	o.flagSet().VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		name := "`--" + f.Name
		if arg != "" {
			name += " " + arg
		}
		name += "`"
		for _, l := range lines {
			if strings.Contains(l, name) && strings.Contains(l, text) {
				return
			}
		}
		t.Errorf("%s: no line with %s and its text %q", cliDoc, name, text)
	})
	for _, h := range []string{"`-h`", "`--help`"} {
		if !strings.Contains(doc, h) {
			t.Errorf("%s: no %s", cliDoc, h)
		}
	}
	for _, code := range []int{ExitOK, ExitError, ExitUsage} {
		if want := fmt.Sprintf("\n| %d |", code); !strings.Contains(doc, want) {
			t.Errorf("%s: exit status %d is not in its table", cliDoc, code)
		}
	}
	for _, v := range envRead(t) {
		if !strings.Contains(doc, "| `"+v+"` |") {
			t.Errorf("%s: the environment variable %s, which bingo reads, is not in its table", cliDoc, v)
		}
	}
}

// envRead returns the environment variables this package's code reads by
// name.
func envRead(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("([A-Z_0-9]+)"\)`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("found no environment variable read: the pattern is stale")
	}
	return names
}

// docs/cli.md's subcommand table is bingo help's: one row a subcommand,
// in its order, its synopsis and its words, and no row besides. A
// subcommand renamed or reworded here cannot leave the reference behind.
func TestTheSubcommandTableIsBingoHelps(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(b)[strings.Index(string(b), "## Subcommands\n"):], "## Subcommands\n")
	if !ok {
		t.Fatalf("%s: no ## Subcommands", cliDoc)
	}
	type row struct{ usage, what string }
	var rows []row
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// A | inside a cell is written \|, as markdown wants.
		cells := strings.Split(strings.Trim(strings.ReplaceAll(line, `\|`, "\x00"), "| "), " | ")
		if len(cells) != 2 {
			t.Errorf("%s: a subcommand row of %d cells, want usage and what it does: %s", cliDoc, len(cells), line)
			continue
		}
		unescape := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\x00", "|") }
		rows = append(rows, row{strings.Trim(unescape(cells[0]), "`"), unescape(cells[1])})
	}
	if len(rows) != len(subcommands) {
		t.Errorf("%s: %d rows in the subcommand table, want one for each of the %d subcommands", cliDoc, len(rows), len(subcommands))
	}
	for i, s := range subcommands {
		want := row{s.synopsis(), s.what}
		if i >= len(rows) {
			t.Errorf("%s: no row %d: | `%s` | %s |", cliDoc, i+1, want.usage, want.what)
			continue
		}
		if rows[i] != want {
			t.Errorf("%s: row %d is\n\t| `%s` | %s |\nbingo help says\n\t| `%s` | %s |", cliDoc, i+1, rows[i].usage, rows[i].what, want.usage, want.what)
		}
	}
}

// docs/cli.md names every transport bingo plugins can show, where it
// describes the listing's columns.
func TestTheListingsTransportsAreTheManifests(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "transport (")
	if i < 0 {
		t.Fatalf("%s: bingo plugins' columns name no transport (…)", cliDoc)
	}
	said := doc[i : i+strings.Index(doc[i:], ")")]
	for _, tr := range []string{manifest.TransportExec, manifest.TransportWasm, manifest.TransportHTTP} {
		if !strings.Contains(said, "`"+tr+"`") {
			t.Errorf("%s: %q does not name the transport `%s`", cliDoc, said, tr)
		}
	}
}
