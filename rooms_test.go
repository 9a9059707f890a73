package bingo

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds a production Go file: past it a newcomer can no
// longer hold one file's story in their head, and it is split by concern.
const maxFileLines = 700

// maxDocLines bounds a package's doc comment: what a package is and the
// contract it keeps; the reasons behind it live in docs/design.md.
const maxDocLines = 60

// tooLong are the files not yet split, and longDocs the package docs not
// yet cut; each must still be over its bound, so that the lists only
// shrink.
var (
	tooLong  = map[string]bool{}
	longDocs = map[string]bool{}
)

func goFiles(t *testing.T, keep func(path string) bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && keep(path) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestNoProductionFileOverTheBound(t *testing.T) {
	for _, path := range goFiles(t, func(p string) bool { return !strings.HasSuffix(p, "_test.go") }) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		switch {
		case n > maxFileLines && !tooLong[path]:
			t.Errorf("%s: %d lines, over %d: split it by concern", path, n, maxFileLines)
		case n <= maxFileLines && tooLong[path]:
			t.Errorf("%s: %d lines, within %d: take it off tooLong", path, n, maxFileLines)
		}
	}
}

func TestPackageDocsAreShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range goFiles(t, func(p string) bool { return !strings.HasSuffix(p, "_test.go") }) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc == nil {
			continue
		}
		n := len(f.Doc.List)
		switch {
		case n > maxDocLines && !longDocs[path]:
			t.Errorf("%s: the package doc is %d lines, over %d: move the reasons to docs/design.md", path, n, maxDocLines)
		case n <= maxDocLines && longDocs[path]:
			t.Errorf("%s: the package doc is %d lines, within %d: take it off longDocs", path, n, maxDocLines)
		}
	}
}

// TestNoStaleComments keeps out comments that name code that is gone or
// tell the story of an incident rather than the rule it left.
func TestNoStaleComments(t *testing.T) {
	stale := []string{"waiter.await", "first handshake", "667 MB"}
	fset := token.NewFileSet()
	for _, path := range goFiles(t, func(string) bool { return true }) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Comments {
			text := g.Text()
			for _, s := range stale {
				if strings.Contains(text, s) {
					t.Errorf("%s: a comment still says %q", fset.Position(g.Pos()), s)
				}
			}
		}
	}
}

// TestHelpersWrittenOnce finds a helper written again: a function whose
// body is another's, or one of the helpers once written in several
// packages, each its own way (quoting text on one line, reading a capped
// file, dropping an error's path), defined anywhere again.
func TestHelpersWrittenOnce(t *testing.T) {
	once := map[string]bool{"oneLine": true, "bareErr": true, "readCapped": true}
	fset := token.NewFileSet()
	bodies := map[string]string{}
	defined := map[string]string{}
	for _, path := range goFiles(t, func(p string) bool { return !strings.HasSuffix(p, "_test.go") }) {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			where := path + ": " + fd.Name.Name
			if once[fd.Name.Name] && fd.Recv == nil {
				if prev, ok := defined[fd.Name.Name]; ok {
					t.Errorf("%s is written again (first %s)", where, prev)
				}
				defined[fd.Name.Name] = where
			}
			var b bytes.Buffer
			printer.Fprint(&b, token.NewFileSet(), fd.Body)
			if len(fd.Body.List) < 2 || b.Len() < 120 { // a one-liner is no twin
				continue
			}
			if prev, ok := bodies[b.String()]; ok {
				t.Errorf("%s has the body of %s", where, prev)
			}
			bodies[b.String()] = where
		}
	}
}

// TestPlainWords keeps the code's names in words a newcomer reads without
// a glossary: private words once used for plain things (a request not yet
// answered, a plugin not running, the goroutines that serve a plugin)
// name nothing in production code, and no file is named after one.
func TestPlainWords(t *testing.T) {
	private := map[string]string{
		"owed": "unanswered", "owes": "unanswered", "verdict": "decision or finding", "crew": "workers",
		"woke": "started", "poke": "nudge", "vouched": "this run", "vouch": "mayRun", "asleep": "idle",
	}
	fset := token.NewFileSet()
	for _, path := range goFiles(t, func(string) bool { return true }) {
		if strings.Contains(filepath.Base(path), "faith") {
			t.Errorf("%s: name the file for what it tests", path)
		}
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			for _, w := range splitWords(id.Name) {
				if plain, bad := private[w]; bad {
					t.Errorf("%s: %s: say %s", fset.Position(id.Pos()), id.Name, plain)
					break
				}
			}
			return true
		})
	}
}

// splitWords splits a Go name into its lower-case words: "firstOwed" is
// first, owed.
func splitWords(name string) []string {
	var words []string
	start := 0
	for i := 1; i <= len(name); i++ {
		if i == len(name) || name[i] >= 'A' && name[i] <= 'Z' || name[i] == '_' {
			if w := strings.Trim(strings.ToLower(name[start:i]), "_"); w != "" {
				words = append(words, w)
			}
			start = i
		}
	}
	return words
}
