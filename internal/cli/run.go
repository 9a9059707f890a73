package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/term"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
)

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

// dirsToRun asks about each --plugin-dir that lies inside a project the
// person has not trusted (mayRun), and returns those the person said to run
// this once; ok is false if one may not run, which mayRun has said.
func (r *run) dirsToRun(ctx context.Context) (thisRun []string, ok bool) {
	for _, d := range r.o.pluginDirs {
		dir := pluginDir(r.cwd, d)
		ok, untrusted := r.mayRun(ctx, "--plugin-dir "+d, dir)
		if !ok {
			return nil, false
		}
		if untrusted {
			thisRun = append(thisRun, dir)
		}
	}
	return thisRun, true
}

// mayRun reports whether the plugins in dir, which what names (a
// --plugin-dir, plugins check's DIR), may run with the person's rights.
// Inside a project the person has not trusted (host.UntrustedProject)
// that is their explicit act: --trust, or yes at the terminal; with no one
// to ask and no --trust, mayRun says why not and how to run them. untrusted
// reports whether dir lies in such a project.
func (r *run) mayRun(ctx context.Context, what, dir string) (ok, untrusted bool) {
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
