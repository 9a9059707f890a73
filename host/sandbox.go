package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/internal/egress"
	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Confinement is the sandbox one exec plugin or stdio MCP server runs
// in, as a run or bingo plugins check starts it.
type Confinement struct {
	Sandbox *shepherd.Sandbox
	// Egress is the proxy to the hosts it is granted by name, or nil;
	// its owner closes it once the plugin is stopped.
	Egress *egress.Proxy
	// Isolation is how it is confined here, and Less why that is less
	// than the default ("" if it is not): see shepherd.Isolation.
	Isolation, Less string
}

// Confine returns the confinement a run in cfg.Cwd, under the person's
// settings s, gives the exec plugin or stdio MCP server m (which the
// person trusts) with its data directory dataDir ("" for none): what
// bingo plugins check runs it in, so that what the check passes is what
// runs. Refused hosts are written in log and said through cfg.Notify.
// The error is why it may not start here: sandbox.require, or no proxy.
func Confine(cfg Config, s settings.Settings, m *manifest.Manifest, dataDir string, log io.Writer) (Confinement, error) {
	if cfg.Notify == nil {
		cfg.Notify = func(bridge.Notice) {}
	}
	h := &Host{cfg: cfg, settings: s}
	return h.confine(m, dataDir, log)
}

// confine is Confine for the host's own settings: execSandbox, with an
// egress proxy for the hosts granted by name.
func (h *Host) confine(m *manifest.Manifest, dataDir string, log io.Writer) (Confinement, error) {
	c := Confinement{Sandbox: h.execSandbox(m, dataDir, log)}
	h.sayMissing(m, log)
	if len(c.Sandbox.Network) > 0 && !c.Sandbox.AnyNetwork() {
		p, err := h.egressFor(m.Name, c.Sandbox.Network, log)
		if err != nil {
			return c, fmt.Errorf("not loaded: %w", err)
		}
		c.Egress, c.Sandbox.Proxy, c.Sandbox.ProxySocket = p, p.Addr(), p.Socket()
	}
	c.Isolation, c.Less = shepherd.Isolation(c.Sandbox)
	if c.Less != "" && h.settings.SandboxRequire {
		return c, fmt.Errorf("not started: sandbox.require is set, and here it would run with less than the default sandbox: %s", c.Less)
	}
	return c, nil
}

// execSandbox returns the confinement of an exec plugin or stdio MCP
// server (see docs/plugins.md): the system read-only, its own directory
// and what its program runs from (the exec transport adds that) read-only,
// the working directory read-only (read-write if granted), its data
// directory and a private temporary directory (the shepherd's) writable,
// no network; and whatever the person's sandbox.<name> adds. Neither home
// nor a directory holding it is ever given whole, nor ~/.bingo, whatever
// was granted (grantPaths, which writes in log what it leaves out).
func (h *Host) execSandbox(m *manifest.Manifest, dataDir string, log io.Writer) *shepherd.Sandbox {
	grant := h.grantOf(m)
	s := &shepherd.Sandbox{
		Read:    append([]string(nil), shepherd.SystemRead...),
		Write:   append([]string(nil), shepherd.SystemWrite...),
		Network: grant.Network,
		Require: h.settings.SandboxRequire,
	}
	if h.mayGrant(m.Root) {
		s.Read = append(s.Read, m.Root)
	}
	if cwd := h.cfg.Cwd; cwd != "" {
		var dirs []string
		if h.mayGrant(cwd) {
			dirs = []string{cwd}
		} else if home := filepath.Clean(h.cfg.Home); within(home, filepath.Clean(cwd)) && filepath.Clean(cwd) != home {
			// A directory that holds home: what it holds beside the
			// way down to home, as it is when the plugin starts, and
			// the names along that way, but nothing of home.
			s.List, dirs = around(filepath.Clean(cwd), home)
		}
		if grant.Writable {
			s.Write = append(s.Write, dirs...)
		} else {
			s.Read = append(s.Read, dirs...)
		}
	}
	if dataDir != "" {
		s.Write = append(s.Write, dataDir)
	}
	for _, g := range []struct {
		paths []string
		to    *[]string
	}{{grant.Read, &s.Read}, {grant.Write, &s.Write}} {
		paths, list := h.besideBingo(h.grantPaths(g.paths, log))
		*g.to = append(*g.to, paths...)
		s.List = append(s.List, list...)
	}
	if d, ok := launchers[filepath.Base(m.Entry.Command)]; ok {
		s.Read = append(s.Read, h.expandHome(d.read)...)
		for _, dir := range h.expandHome(d.write) {
			// Made if missing, as the runner would: a grant is of
			// what exists when the plugin starts.
			_ = os.MkdirAll(dir, 0o700)
			s.Write = append(s.Write, dir)
		}
		if !s.AnyNetwork() {
			s.Network = append(s.Network, d.network...)
		}
	}
	return s
}

// sayMissing writes in log each path the person's sandbox.<name> or the
// manifest's permissions grant the plugin m that does not exist now: it
// is not granted (a Landlock rule is made on the path opened, and its
// nearest existing parent would grant more than was named). A missing
// write path is said in a notice too, naming the setting, since what the
// plugin was to write there it cannot.
func (h *Host) sayMissing(m *manifest.Manifest, log io.Writer) {
	mine := h.settings.Sandbox[m.Name]
	setting := "sandbox." + m.Name + "."
	for _, g := range []struct {
		setting, where string
		paths          []string
		write          bool
	}{
		{setting + "read", " in your ~/.bingo/settings.json", mine.Read, false},
		{setting + "write", " in your ~/.bingo/settings.json", mine.Write, true},
		{"permissions.read", " in its plugin.json", m.Permissions.Read, false},
		{"permissions.write", " in its plugin.json", m.Permissions.Write, true},
	} {
		for i, p := range h.expandHome(g.paths) {
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			fmt.Fprintf(log, "bingo: %s names %s, which does not exist: not granted (a path is granted as it is when the plugin starts)\n", g.setting, g.paths[i])
			if g.write {
				h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "warn", Message: fmt.Sprintf(
					"%s%s names %s, which does not exist, so it may not write there; create it, and its next start may", g.setting, g.where, g.paths[i])})
			}
		}
	}
}

// launcher is what a package runner needs beyond the default: its cache,
// where it installs what it runs, and the registry it installs from.
type launcher struct{ read, write, network []string }

// launchers are the package runners an entry may start a server with,
// by program name, and what each is granted by default (docs/plugins.md).
var launchers = map[string]launcher{
	"npx": {read: []string{"~/.npmrc"}, write: []string{"~/.npm"}, network: []string{"registry.npmjs.org:443"}},
	"npm": {read: []string{"~/.npmrc"}, write: []string{"~/.npm"}, network: []string{"registry.npmjs.org:443"}},
	"uvx": {read: []string{"~/.config/uv"}, write: []string{"~/.cache/uv", "~/.local/share/uv"},
		network: []string{"pypi.org:443", "files.pythonhosted.org:443"}},
	"uv": {read: []string{"~/.config/uv"}, write: []string{"~/.cache/uv", "~/.local/share/uv"},
		network: []string{"pypi.org:443", "files.pythonhosted.org:443"}},
}

// grantPaths returns the granted paths, a leading "~/" read as the
// person's home, less any that is ~/.bingo or lies inside it (Private):
// a plugin that could read it would learn every plugin's state, and one
// that could write it would trust a repository, whoever granted it. Each
// left out is written in log.
func (h *Host) grantPaths(paths []string, log io.Writer) []string {
	var out []string
	for _, p := range h.expandHome(paths) {
		if err := Private(h.cfg.Home, p); err != nil {
			fmt.Fprintf(log, "bingo: %s is not granted: %v\n", p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// besideBingo returns paths with each that holds ~/.bingo (your home, /,
// /home) replaced by what it holds beside the way down to ~/.bingo, as it
// is now, and the directories along that way in list (their names may be
// read): a Landlock rule grants a directory's whole tree, and no grant may
// reach ~/.bingo.
func (h *Host) besideBingo(paths []string) (out, list []string) {
	if h.cfg.Home == "" {
		return paths, nil
	}
	bingo := filepath.Join(h.cfg.Home, ".bingo")
	for _, p := range paths {
		dir, inner, ok := holding(p, bingo)
		if !ok {
			out = append(out, p)
			continue
		}
		l, entries := around(dir, inner)
		list = append(list, l...)
		for _, e := range entries {
			if Private(h.cfg.Home, e) == nil { // not a link to it
				out = append(out, e)
			}
		}
	}
	return out, list
}

// holding reports whether dir holds inner, by any of their spellings
// (made absolute, or with symlinks resolved), and the two spellings that
// show it.
func holding(dir, inner string) (d, i string, ok bool) {
	for _, i := range spellings(inner) {
		for _, d := range spellings(dir) {
			if d != i && within(i, d) {
				return d, i, true
			}
		}
	}
	return "", "", false
}

// expandHome returns paths with a leading "~/" read as the person's home.
func (h *Host) expandHome(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = filepath.Join(h.cfg.Home, rest)
		}
		out = append(out, p)
	}
	return out
}

// grantOf is what the plugin m, which the person trusts (their own, or a
// trusted project's), is granted: what its manifest asks for
// (Permissions), which trusting or installing it granted, and what the
// person's sandbox.<name> adds.
func (h *Host) grantOf(m *manifest.Manifest) settings.Sandbox {
	g := h.settings.Sandbox[m.Name]
	p := m.Permissions
	g.Writable = g.Writable || p.Writable
	g.Read = append(append([]string(nil), g.Read...), p.Read...)
	g.Write = append(append([]string(nil), g.Write...), p.Write...)
	g.Network = append(append([]string(nil), g.Network...), p.Network...)
	return g
}

// mayGrant reports whether dir may be given to a plugin by default: not
// the person's home nor a directory holding it, and not ~/.bingo itself
// (a plugin's own directory inside it is).
func (h *Host) mayGrant(dir string) bool {
	home := filepath.Clean(h.cfg.Home)
	dir = filepath.Clean(dir)
	if dir == "/" || h.cfg.Home == "" {
		return dir != "/"
	}
	if dir == home || within(home, dir) {
		return false
	}
	bingo := filepath.Join(home, ".bingo")
	if dir == bingo {
		return false
	}
	if fi, err := os.Stat(dir); err == nil {
		if b, err := os.Stat(bingo); err == nil && os.SameFile(fi, b) {
			return false
		}
	}
	return true
}

// around returns, for a directory dir that holds home, the directories
// from dir down to home's parent (list: their names may be read) and every
// entry beside that way (entries: given as the working directory is).
func around(dir, home string) (list, entries []string) {
	for dir != home {
		list = append(list, dir)
		des, err := os.ReadDir(dir)
		if err != nil {
			return list, entries
		}
		next := ""
		for _, de := range des {
			p := filepath.Join(dir, de.Name())
			if p == home || within(home, p) {
				next = p
				continue
			}
			entries = append(entries, p)
		}
		if next == "" {
			return list, entries
		}
		dir = next
	}
	return list, entries
}

// sayLessIsolated says once, at Open, which exec plugins run with less
// than the default sandbox here, and why: one notice for each reason,
// naming the plugins it holds for.
func (h *Host) sayLessIsolated() {
	var reasons []string
	names := map[string][]string{}
	for _, l := range h.plugins {
		if l.less != "" && l.err == nil {
			if names[l.less] == nil {
				reasons = append(reasons, l.less)
			}
			names[l.less] = append(names[l.less], l.m.Name)
		}
	}
	for _, why := range reasons {
		who := "plugin " + names[why][0] + " runs"
		if len(names[why]) > 1 {
			who = "plugins " + strings.Join(names[why], ", ") + " run"
		}
		h.notice("warn", "%s with less than the default sandbox: %s; \"sandbox\": {\"require\": true} in your settings refuses to start them instead",
			who, why)
	}
}

// egressFor starts the egress proxy through which the plugin named name
// reaches the hosts it is granted (internal/egress). A host it is refused
// is said in its log and, once a run, in a notice naming the setting that
// grants it.
func (h *Host) egressFor(name string, allow []string, log io.Writer) (*egress.Proxy, error) {
	setting := "sandbox." + name + ".network in your ~/.bingo/settings.json"
	return egress.Start(allow, setting, func(target string) {
		fmt.Fprintf(log, "bingo: refused a connection to %s: it is not in sandbox.%s.network\n", target, name)
		h.cfg.Notify(bridge.Notice{Plugin: name, Level: "warn",
			Message: fmt.Sprintf("it was refused a connection to %s; %s grants it", target, setting)})
	})
}

// refusals watches an exec plugin's log for the sandbox's refusals that
// its program reports there, and says the first of a run in a notice
// naming the settings that grant a path. The kernel tells the plugin, not
// bingo, what Landlock refused (its audit log is root's), so this is what
// the plugin itself wrote: Python's PermissionError, Node's EACCES, a C
// program's "Permission denied", or the EPERM of a socket the seccomp
// filter refuses. A refusal the plugin keeps to itself is not seen.
type refusals struct {
	*LogFile
	name   string
	notify func(bridge.Notice)
	once   sync.Once
}

// refusedMarks are what programs write of a refused open.
var refusedMarks = []string{"Permission denied", "EACCES", "Operation not permitted", "EPERM"}

func (r *refusals) Write(p []byte) (int, error) {
	for _, mark := range refusedMarks {
		i := bytes.Index(p, []byte(mark))
		if i < 0 {
			continue
		}
		start := bytes.LastIndexByte(p[:i], '\n') + 1
		end := bytes.IndexByte(p[i:], '\n')
		if end < 0 {
			end = len(p) - i
		}
		line := strings.TrimSpace(string(p[start : i+end]))
		if len(line) > 200 {
			line = line[:200] + "…"
		}
		r.once.Do(func() {
			r.notify(bridge.Notice{Plugin: r.name, Level: "warn", Message: fmt.Sprintf(
				"it was refused something it tried (its log: %q); if it needs a path, sandbox.%s.read, .write or .writable in your ~/.bingo/settings.json grants it, and if the network, sandbox.%s.network",
				line, r.name, r.name)})
		})
		break
	}
	return r.LogFile.Write(p)
}

// ConfineWasm returns the sandbox a run gives the wasm plugin m (which
// the person trusts) with its data directory dataDir ("" for none), as
// the part of its wasm.Config that says what it sees: Writable, Mounts,
// Hide and MemoryLimitMiB. The caller sets the rest, the working directory
// (Dir) included. It is what bingo plugins check runs the plugin in, so
// that what the check passes is what runs. What is not mounted is written
// in log and, where a notice is due, said through cfg.Notify.
func ConfineWasm(cfg Config, s settings.Settings, m *manifest.Manifest, dataDir string, log io.Writer) wasm.Config {
	if cfg.Notify == nil {
		cfg.Notify = func(bridge.Notice) {}
	}
	h := &Host{cfg: cfg, settings: s}
	return h.confineWasm(m, dataDir, h.grantOf(m), log)
}

// confineWasm is what a wasm plugin sees beside the working directory:
// that read-only unless grant makes it writable, its data directory
// read-write, its own files read-only, and the directories grant names
// (read-only, or read-write), each at its own path; never ~/.bingo
// (Private, and Hide), whatever it was granted; the memory grant gives.
// WASI gives a module directories, not files, and no sockets: a granted
// file or network is written in log as not given.
func (h *Host) confineWasm(m *manifest.Manifest, dataDir string, grant settings.Sandbox, log io.Writer) wasm.Config {
	c := wasm.Config{Writable: grant.Writable, MemoryLimitMiB: grant.MemoryMiB}
	if h.cfg.Home != "" {
		c.Hide = filepath.Join(h.cfg.Home, ".bingo")
	}
	if dataDir != "" {
		c.Mounts = append(c.Mounts, wasm.Mount{Dir: dataDir, Writable: true})
	}
	if err := Private(h.cfg.Home, m.Root); err != nil && m.Layer != manifest.LayerUser {
		h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "warn", Message: "its own directory is not mounted: " + err.Error()})
	} else {
		c.Mounts = append(c.Mounts, wasm.Mount{Dir: m.Root})
	}
	if len(grant.Read)+len(grant.Write) > 0 {
		h.sayMissing(m, log)
	}
	for _, g := range []struct {
		paths    []string
		writable bool
	}{{grant.Read, false}, {grant.Write, true}} {
		for _, p := range h.grantPaths(g.paths, log) {
			fi, err := os.Stat(p)
			switch {
			case err != nil:
				// Missing: sayMissing said so.
			case !fi.IsDir():
				fmt.Fprintf(log, "bingo: %s is a file, and a wasm plugin is given directories only: not granted\n", p)
			default:
				c.Mounts = append(c.Mounts, wasm.Mount{Dir: p, Writable: g.writable})
			}
		}
	}
	if len(grant.Network) > 0 {
		fmt.Fprintf(log, "bingo: a wasm plugin has no sockets, so the network it is granted (%s) gives it nothing\n", strings.Join(grant.Network, ", "))
	}
	return c
}
