package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/internal/check"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/internal/scaffold"
)

// pluginsOptions are the flags of bingo plugins' own subcommands.
type pluginsOptions struct {
	inputs         string
	lang, dir, kit string
}

func (o *options) pluginsFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.lang, "lang", "", "with new: the plugin's `LANGUAGE`: "+strings.Join(scaffold.Langs, ", "))
	fs.StringVar(&o.dir, "dir", "", "with new: write the plugin into `DIR` (default ./NAME)")
	fs.StringVar(&o.kit, "kit", "", "with new --lang wasm: build against the bingo checkout in `DIR` (a replace directive in go.mod)")
	fs.StringVar(&o.inputs, "inputs", "", "with check: the inputs to call the plugin with, from `FILE` (found from --cwd when relative): {\"tool\": {…input…}, \"service-key\": {\"method\": …, \"params\": …}, \"tool/cancel\": {\"tool\": …, \"input\": {…a slow call…}}}")
}

// pluginsSubcommand runs bingo plugins check DIR (or new NAME).
func pluginsSubcommand(o options, rest []string, stdin io.Reader, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	switch {
	case rest[0] == "check" && len(rest) == 2:
		return checkPlugin(o, rest[1], stdin, stdout, stderr)
	case rest[0] == "check":
		return usageError(stderr, fs, "plugins", "plugins check takes one DIR, the plugin's own directory")
	case rest[0] == "new" && len(rest) == 2:
		return newPlugin(o, rest[1], stdout, stderr)
	case rest[0] == "new":
		return usageError(stderr, fs, "plugins", "plugins new takes one NAME")
	}
	return usageError(stderr, fs, "plugins", "plugins takes no arguments but check DIR or new NAME")
}

// newPlugin writes a new plugin from the templates (internal/scaffold).
func newPlugin(o options, name string, stdout, stderr io.Writer) int {
	if o.lang == "" {
		fmt.Fprintf(stderr, "bingo: plugins new needs --lang: %s\n", strings.Join(scaffold.Langs, ", "))
		return ExitUsage
	}
	dir := o.dir
	if dir == "" {
		dir = name
	}
	if o.cwd != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(o.cwd, dir)
	}
	kit := o.kit
	if o.cwd != "" && kit != "" && !filepath.IsAbs(kit) {
		kit = filepath.Join(o.cwd, kit)
	}
	files, err := scaffold.Write(dir, name, o.lang, kit)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: plugins new: %v\n", err)
		return ExitUsage
	}
	fmt.Fprintf(stdout, "wrote a %s plugin %s in %s:\n", o.lang, name, dir)
	for _, f := range files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	switch o.lang {
	case "go":
		fmt.Fprintf(stdout, "build it: (cd %s && go build -o %s .)\n", dir, name)
	case "wasm":
		fmt.Fprintf(stdout, "build it: (cd %s && GOOS=wasip1 GOARCH=wasm go build -o plugin.wasm .)\n", dir)
	case "c", "rust":
		fmt.Fprintf(stdout, "build it: %s (its README names the Debian packages it needs)\n", filepath.Join(dir, "build.sh"))
	}
	fmt.Fprintf(stdout, "check it: bingo plugins check %s\n", dir)
	return ExitOK
}

// checkPlugin runs the conformance checker on dir and prints its report:
// one line a finding, or JSON with --json. It exits 0 only when the
// plugin conforms.
func checkPlugin(o options, dir string, stdin io.Reader, stdout, stderr io.Writer) int {
	if o.cwd != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(o.cwd, dir)
	}
	if err := isDir(dir); err != nil {
		fmt.Fprintf(stderr, "bingo: plugins check %s: %v\n", dir, err)
		return ExitUsage
	}
	opts := check.Options{Dir: dir, Cwd: o.cwd}
	if o.inputs != "" {
		inputs := o.inputs
		if o.cwd != "" && !filepath.IsAbs(inputs) {
			inputs = filepath.Join(o.cwd, inputs) // as the plugin's dir is
		}
		b, err := os.ReadFile(inputs)
		if err == nil {
			err = json.Unmarshal(b, &opts.Inputs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "bingo: --inputs %s: %v (want {\"tool\": {…}})\n", o.inputs, err)
			return ExitUsage
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		opts.Home = home
		opts.CacheDir = filepath.Join(home, ".bingo", "data", "cache", "wasm")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Checking runs the plugin: a repository's, only by the person's word.
	r, err := newRun(o, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: %v\n", err)
		return ExitUsage
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: plugins check %s: %v\n", dir, err)
		return ExitUsage
	}
	if ok, _ := r.mayRun(ctx, "plugins check "+dir, abs); !ok {
		return ExitError
	}
	rep, err := check.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "bingo: plugins check: %v\n", err)
		return ExitError
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		name := rep.Plugin
		if name == "" {
			name = rep.Dir
		}
		fmt.Fprintf(stdout, "checking %s\n", render.Line(name))
		fails := 0
		for _, f := range rep.Findings {
			if f.Level == check.Fail {
				fails++
			}
			// The findings quote what the plugin said.
			fmt.Fprintf(stdout, "%-4s  %s\n", f.Level, render.Line(f.String()))
		}
		if rep.Conforms {
			fmt.Fprintf(stdout, "%s conforms\n", render.Line(name))
		} else {
			fmt.Fprintf(stdout, "%s does not conform: %d problem(s)\n", render.Line(name), fails)
		}
	}
	if !rep.Conforms {
		return ExitError
	}
	return ExitOK
}
