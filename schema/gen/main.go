// Command gen writes schema/plugin.json from the Go types (schema.Generate).
// Run it as `go run ./schema/gen` at the module root, or `go generate
// ./schema`; -o writes elsewhere, -check only reports whether the file is
// current.
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

// run is the command as a function of its arguments and writers, so it can
// be tested in-process. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "file to write (default: "+schema.File+" under the module root)")
	check := fs.Bool("check", false, "write nothing; exit 1 if the file differs from what would be written")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	path := *out
	if path == "" {
		root, err := schema.ModuleRoot()
		if err != nil {
			fmt.Fprintln(stderr, "gen:", err)
			return 1
		}
		path = filepath.Join(root, filepath.FromSlash(schema.File))
	}
	b, err := schema.Generate()
	if err != nil {
		fmt.Fprintln(stderr, "gen:", err)
		return 1
	}
	if *check {
		cur, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(cur, b) {
			fmt.Fprintf(stderr, "gen: %s is not current: run go run ./schema/gen\n", path)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintln(stderr, "gen:", err)
		return 1
	}
	fmt.Fprintln(stdout, "wrote", path)
	return 0
}
