package exec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/internal/lookpath"
	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
)

// runsFrom returns what a confined program needs to read to run at all,
// beyond the system: the installation the program at path belongs to (the
// directory above its bin, so an interpreter finds its libraries, and a
// version manager's shim finds what it runs), the same for the interpreter
// a script's "#!" line names, and, for each of args that names an existing
// file, the directory it is in, or the whole node_modules tree it lies in
// (where its dependencies are found), and the PATH's directories (with a
// shims directory's installation). Nothing that is the person's home or
// lies above it is ever given whole: home is the person's, never the
// plugin's.
func runsFrom(path string, args []string, dir string, env []string) []string {
	home := homeOf(env)
	var out []string
	add := func(p string) {
		p = filepath.Clean(p)
		if home != "" && (p == home || strings.HasPrefix(home, p+string(filepath.Separator))) || p == "/" {
			return
		}
		out = append(out, p)
	}
	program := func(p string) {
		add(p)
		for _, q := range []string{p, realpath(p)} {
			bin := filepath.Dir(q)
			if prefix := filepath.Dir(bin); prefix != bin && !isAbove(prefix, home) {
				add(prefix)
			} else {
				add(bin)
			}
		}
	}
	program(path)
	if interp := shebang(path, dir, env); interp != "" {
		program(interp)
	}
	// The programs it may run by name: the PATH's directories (their
	// programs, not what lies beside them: ~/.cargo/bin, not ~/.cargo),
	// and for a version manager's shims (pyenv, rbenv, asdf), what they
	// run, the installation the shims directory lies in.
	for _, d := range filepath.SplitList(pathOf(env)) {
		if !filepath.IsAbs(d) {
			continue
		}
		add(d)
		if filepath.Base(d) == "shims" && !isAbove(filepath.Dir(d), home) {
			add(filepath.Dir(d))
		}
	}
	for _, a := range args {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			add(p)
			continue
		}
		if i := strings.Index(p, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
			add(p[:i+len("/node_modules")])
			continue
		}
		add(filepath.Dir(p))
	}
	return out
}

// isAbove reports whether p is home or a directory holding it.
func isAbove(p, home string) bool {
	return p == "/" || home != "" && (p == home || strings.HasPrefix(home, p+string(filepath.Separator)))
}

// shebang returns the interpreter the script at path names in its "#!"
// line, looked up in the plugin's PATH when the line runs it through env;
// "" for a binary.
func shebang(path, dir string, env []string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return ""
	}
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
			continue
		}
		p, err := lookpath.Find(f, dir, env)
		if err != nil {
			return ""
		}
		return p
	}
	return ""
}

func realpath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// pathOf returns PATH as the plugin's environment sets it, or the host's.
func pathOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == "PATH" {
			return v
		}
	}
	return os.Getenv("PATH")
}

// homeOf returns HOME as the plugin's environment sets it, or the host's.
func homeOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == "HOME" {
			return filepath.Clean(v)
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Clean(h)
	}
	return ""
}

// confinement returns the sandbox one start of the program at path runs
// in: the configured one, with what the program runs from.
func (t *Transport) confinement(path string) *shepherd.Sandbox {
	if t.cfg.Sandbox == nil {
		return nil
	}
	s := *t.cfg.Sandbox
	s.Read = append(append([]string(nil), s.Read...), runsFrom(path, t.cfg.Args, t.cfg.Dir, t.cfg.Env)...)
	s.Write = append([]string(nil), s.Write...)
	return &s
}
