package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
