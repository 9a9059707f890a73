package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/par"
)

// The layer names, lowest precedence first.
const (
	LayerUser    = "user"    // ~/.bingo/plugins: yours, in every project
	LayerProject = "project" // <project>/.bingo/plugins: this repository's
	LayerDir     = "dir"     // a --plugin-dir given for one run
)

// Layer is one place plugins are installed in.
type Layer struct {
	Name string // LayerUser, LayerProject or LayerDir
	Dir  string // holds one sub-directory per plugin, or is one plugin's directory (Single)
	// Single says Dir is itself a plugin's directory: a --plugin-dir naming
	// the plugin being written rather than a directory of plugins. The
	// layer holds that plugin only.
	Single bool
	// Most, if not 0, caps how many plugin directories of the layer are
	// read: the first Most by name. The rest are one Problem naming how
	// many were left out, not a Problem each.
	Most int
	// MCPFile, if set, is an MCP configuration file whose servers are
	// plugins of the layer too (LoadMCPFile): the project's .mcp.json.
	MCPFile string
}

// ProjectLayer is the project layer of the project at root: the plugins
// of root/.bingo/plugins and the servers of root/.mcp.json.
func ProjectLayer(root string) Layer {
	return Layer{Name: LayerProject, Dir: filepath.Join(root, ".bingo", "plugins"), Most: MaxProjectPlugins, MCPFile: filepath.Join(root, MCPFileName)}
}

// MaxProjectPlugins is the Most of a project's layer: a repository chooses
// how many plugins it ships, and each costs a manifest read, a trust digest
// and, for a wasm plugin, a start.
const MaxProjectPlugins = 32

// Problem is a manifest (or a layer directory) that could not be used. It
// is one clear line for a notice: "plugin <file>: <reason>".
type Problem struct {
	File string // the plugin.json, or the directory, that is wrong
	Err  error  // the reason
}

// Error returns "plugin <file>: <reason>".
func (p Problem) Error() string {
	if p.Err == nil {
		return fmt.Sprintf("plugin %s: unknown problem", p.File)
	}
	return fmt.Sprintf("plugin %s: %s", p.File, p.Err)
}

// Unwrap returns the reason, so errors.Is sees through a Problem.
func (p Problem) Unwrap() error { return p.Err }

// ProjectRoot returns the nearest ancestor of cwd, cwd included, that holds
// a .bingo or .git entry (a .git file, as in a worktree, counts), or "" if
// none does. A relative cwd is made absolute first; an empty cwd has no
// project.
func ProjectRoot(cwd string) string {
	if cwd == "" {
		return ""
	}
	dir, err := filepath.Abs(cwd)
	if err != nil {
		return ""
	}
	for {
		for _, marker := range []string{".bingo", ".git"} {
			if _, err := os.Lstat(filepath.Join(dir, marker)); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Project returns cwd's [ProjectRoot] unless that is home itself, or "".
// The home directory is never a project: its .bingo is the person's own
// (their plugins, settings and trust record), found above any folder of
// theirs that has no .git of its own.
func Project(home, cwd string) string {
	root := ProjectRoot(cwd)
	if root == "" || (home != "" && samePath(root, home)) {
		return ""
	}
	return root
}

// Layers returns the layers to discover plugins in, in increasing
// precedence:
//
//   - {"user", home/.bingo/plugins}, unless home is "";
//   - [ProjectLayer] (<project>/.bingo/plugins and <project>/.mcp.json),
//     if cwd has a [ProjectRoot] and it is not home itself (then it would
//     be the user layer twice);
//   - {"dir", d} for each extra dir in order, so a later --plugin-dir wins
//     over an earlier one. A relative d is taken relative to cwd (the
//     session's directory, not the process's); empty entries are ignored.
//     A d that holds a plugin.json is one plugin's directory, not a
//     directory of plugins: its layer is Single.
func Layers(home, cwd string, extraDirs []string) []Layer {
	var layers []Layer
	if home != "" {
		layers = append(layers, Layer{Name: LayerUser, Dir: filepath.Join(home, ".bingo", "plugins")})
	}
	if root := Project(home, cwd); root != "" {
		layers = append(layers, ProjectLayer(root))
	}
	for _, d := range extraDirs {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		d = filepath.Clean(d)
		_, err := os.Lstat(filepath.Join(d, FileName))
		layers = append(layers, Layer{Name: LayerDir, Dir: d, Single: err == nil})
	}
	return layers
}

// samePath reports whether a and b name one directory, spelled alike or
// reached through a symlink.
func samePath(a, b string) bool {
	if aa, err := filepath.Abs(a); err == nil {
		a = aa
	}
	if bb, err := filepath.Abs(b); err == nil {
		b = bb
	}
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// Discover loads the plugins of every layer, given in increasing
// precedence as [Layers] returns them. A later layer's valid manifest wins
// its name over an earlier one's, and holds the ones it hides in Shadows.
// found is sorted by name.
//
// Each immediate sub-directory of a layer directory (or symlink to one) is
// a plugin directory; a Single layer's directory is its only one, and the
// manifest rules are the same (its name is its directory's name). A
// missing layer directory, plain files in a layer directory and
// sub-directories without a plugin.json are skipped silently.
// Every manifest that fails [Load] becomes one Problem, in whichever layer,
// and does not hide a valid manifest of the same name in a lower layer. A
// layer directory that exists but cannot be read, and a symlink whose
// target is missing, are Problems too. problems come in layer order, then
// directory-name order.
func Discover(layers []Layer) (found []*Manifest, problems []Problem) {
	type candidate struct {
		dir, layer string
		problems   []Problem // the layer's, before its first directory
		m          *Manifest
		err        error
	}
	var cands []candidate
	for _, l := range layers {
		dirs, unreadable := pluginDirs(l)
		cands = append(cands, candidate{problems: unreadable})
		for _, dir := range dirs {
			cands = append(cands, candidate{dir: dir, layer: l.Name})
		}
		if l.MCPFile != "" {
			servers, problems := LoadMCPFile(l.MCPFile, l.Name)
			// Its servers count against the layer's cap with its
			// directories: a repository's .mcp.json is as cheap to
			// fill.
			if room := max(l.Most-len(dirs), 0); l.Most > 0 && len(servers) > room {
				problems = append(problems, Problem{File: l.MCPFile, Err: fmt.Errorf("holds %d servers, and at most %d plugins of a %s layer are loaded (its directories first): servers from %q on not loaded",
					len(servers), l.Most, l.Name, servers[room].Server)})
				servers = servers[:room]
			}
			cands = append(cands, candidate{problems: problems})
			for _, m := range servers {
				cands = append(cands, candidate{m: m, layer: l.Name})
			}
		}
	}
	// Loaded in parallel, folded in order below: with many plugins
	// installed, reading and checking their manifests one after another
	// was a fifth of a run that starts none of them.
	par.Each(len(cands), func(i int) {
		c := &cands[i]
		if c.dir == "" {
			return // a layer's problems, or a server already read
		}
		c.m, c.err = Load(c.dir, c.layer)
		// A directory without a plugin.json is no plugin directory, but a
		// plugin.json symlink to nothing is a problem: Load, which follows
		// it, cannot tell them apart, so only then is it looked at
		// unfollowed (not for every plugin, which was one more system
		// call a plugin a run).
		if errors.Is(c.err, fs.ErrNotExist) {
			if _, err := os.Lstat(filepath.Join(c.dir, FileName)); errors.Is(err, fs.ErrNotExist) {
				c.dir = ""
			}
		}
	})

	byName := make(map[string]*Manifest)
	for _, c := range cands {
		problems = append(problems, c.problems...)
		if c.dir == "" && c.m == nil {
			continue
		}
		m, err := c.m, c.err
		if err != nil {
			var p Problem
			if !errors.As(err, &p) {
				p = Problem{File: filepath.Join(c.dir, FileName), Err: err}
			}
			problems = append(problems, p)
			continue
		}
		if prev := byName[m.Name]; prev != nil && prev.Layer == m.Layer && m.Server != "" {
			// One layer holds one plugin of a name: its directory's.
			problems = append(problems, Problem{File: m.File, Err: fmt.Errorf("server %q: its plugin name %s is the plugin %s's", m.Server, m.Name, prev.Root)})
			continue
		}
		if prev := byName[m.Name]; prev != nil {
			m.Shadows = append([]*Manifest{prev}, prev.Shadows...)
			prev.Shadows = nil
		}
		byName[m.Name] = m
	}
	found = make([]*Manifest, 0, len(byName))
	for _, m := range byName {
		found = append(found, m)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	return found, problems
}

// pluginDirs returns the directories of l that may be plugin directories,
// in name order, and the problems of those that cannot be reached.
func pluginDirs(l Layer) (dirs []string, problems []Problem) {
	if l.Single {
		return []string{l.Dir}, nil
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, Problem{File: l.Dir, Err: fmt.Errorf("cannot read the %s layer directory: %w", l.Name, capped.Bare(err))})
		}
		return nil, problems
	}
	for _, e := range entries { // ReadDir sorts by name
		dir := filepath.Join(l.Dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(dir)
			if err != nil {
				problems = append(problems, Problem{File: dir, Err: fmt.Errorf("symlink to a plugin directory that cannot be reached: %w", capped.Bare(err))})
				continue
			}
			isDir = fi.IsDir()
		}
		if isDir {
			dirs = append(dirs, dir)
		}
	}
	if l.Most > 0 && len(dirs) > l.Most {
		left := filepath.Base(dirs[l.Most])
		if more := len(dirs) - l.Most - 1; more > 0 {
			left += fmt.Sprintf(" and %d more", more)
		}
		problems = append(problems, Problem{File: l.Dir, Err: fmt.Errorf("holds %d plugin directories, and at most %d of a %s layer are loaded (the first by name): %s not loaded",
			len(dirs), l.Most, l.Name, left)})
		dirs = dirs[:l.Most]
	}
	return dirs, problems
}

// HoldBack gives a name back to the copy found shadows, wherever hold says
// the winner may not keep it: a project plugin the person has not trusted
// never shadows one of the person's, whose name the person's settings
// mean. The copy it shadowed (the highest below it) wins again and keeps
// the rest of its Shadows; a winner hold refuses that shadows nothing
// keeps its name. kept is sorted by name as found is; held are the copies
// given up, in found's order, with their Shadows cleared.
func HoldBack(found []*Manifest, hold func(*Manifest) bool) (kept, held []*Manifest) {
	kept = make([]*Manifest, 0, len(found))
	for _, m := range found {
		if len(m.Shadows) == 0 || !hold(m) {
			kept = append(kept, m)
			continue
		}
		keeper := m.Shadows[0]
		keeper.Shadows = m.Shadows[1:]
		m.Shadows = nil
		kept = append(kept, keeper)
		held = append(held, m)
	}
	return kept, held
}
