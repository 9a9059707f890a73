// Command gen writes the generated schemas: schema/plugin.json from the Go
// types of the wire (schema.Generate) and schema/settings.json from the
// table of settings keys (schema.GenerateSettings). Run it as `go run
// ./schema/gen` at the module root, or `go generate ./schema`; -dir writes
// both elsewhere, -check only reports whether the files are current.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bingo/bingo-plugin-rpc/schema"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// targets are the files gen writes, relative to the module root, each with
// what generates it.
var targets = []struct {
	file     string
	generate func() ([]byte, error)
}{
	{schema.File, schema.Generate},
	{schema.SettingsFile, schema.GenerateSettings},
}

// run is the command as a function of its arguments and writers, so it can
// be tested in-process. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory to write the files in (default: schema/ under the module root)")
	check := fs.Bool("check", false, "write nothing; exit 1 if a file differs from what would be written")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	code := 0
	for _, t := range targets {
		path := filepath.Join(*dir, filepath.Base(t.file))
		if *dir == "" {
			root, err := schema.ModuleRoot()
			if err != nil {
				fmt.Fprintln(stderr, "gen:", err)
				return 1
			}
			path = filepath.Join(root, filepath.FromSlash(t.file))
		}
		b, err := t.generate()
		if err != nil {
			fmt.Fprintln(stderr, "gen:", err)
			return 1
		}
		if *check {
			cur, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(cur, b) {
				fmt.Fprintf(stderr, "gen: %s is not current: run go run ./schema/gen (or make schema)\n", path)
				code = 1
			}
			continue
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintln(stderr, "gen:", err)
			return 1
		}
		fmt.Fprintln(stdout, "wrote", path)
	}
	return code
}
