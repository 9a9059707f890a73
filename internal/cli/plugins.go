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

	"github.com/bingo/bingo-plugin-rpc/internal/check"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
)

// pluginsOptions are the flags of bingo plugins' own subcommands.
type pluginsOptions struct {
	inputs string
}

func (o *options) pluginsFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.inputs, "inputs", "", "with check: the inputs to call the plugin with, from `FILE`: {\"tool\": {…input…}, \"service-key\": {\"method\": …, \"params\": …}}")
}

// pluginsSubcommand runs bingo plugins check DIR (or new NAME).
func pluginsSubcommand(o options, rest []string, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	switch {
	case rest[0] == "check" && len(rest) == 2:
		return checkPlugin(o, rest[1], stdout, stderr)
	case rest[0] == "check":
		return usageError(stderr, fs, "plugins", "plugins check takes one DIR, the plugin's own directory")
	}
	return usageError(stderr, fs, "plugins", "plugins takes no arguments but check DIR")
}

// checkPlugin runs the conformance checker on dir and prints its report:
// one line a finding, or JSON with --json. It exits 0 only when the
// plugin conforms.
func checkPlugin(o options, dir string, stdout, stderr io.Writer) int {
	if o.cwd != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(o.cwd, dir)
	}
	if err := isDir(dir); err != nil {
		fmt.Fprintf(stderr, "bingo: plugins check %s: %v\n", dir, err)
		return ExitUsage
	}
	opts := check.Options{Dir: dir, Cwd: o.cwd}
	if o.inputs != "" {
		b, err := os.ReadFile(o.inputs)
		if err == nil {
			err = json.Unmarshal(b, &opts.Inputs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "bingo: --inputs %s: %v (want {\"tool\": {…}})\n", o.inputs, err)
			return ExitUsage
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		opts.CacheDir = filepath.Join(home, ".bingo", "data", "cache", "wasm")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
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
