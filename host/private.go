package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Private reports why dir may not be mounted into a wasm plugin's
// sandbox, or returns nil: it lies inside the host's /proc, /sys or /dev,
// or a file system of the host's mounted elsewhere (wasm.HostDir), or it is, or lies inside, the person's ~/.bingo
// (their trust record, settings, plugins, caches and logs), which a plugin
// that could write it would use to trust a repository or install a plugin
// of its own, and a plugin that could read it would learn every plugin's
// state. A dir that holds ~/.bingo may be mounted, with ~/.bingo hidden
// (wasm.Config.Hide). The paths are compared as spelled and with symlinks
// resolved, so neither a link into ~/.bingo nor a ~/.bingo that is itself
// a link slips past, and dir and its parents by identity (device and
// inode), so neither does another spelling of it: ~/.BINGO on a
// case-insensitive disk, a bind mount.
//
// A plugin's own directories inside ~/.bingo, its data directory and an
// installed plugin's root, are the host's deliberate mounts and are not
// checked here.
func Private(home, dir string) error {
	if dir == "" {
		return nil
	}
	if d := wasm.HostDir(dir); d != "" {
		return fmt.Errorf("%s lies inside %s, the host's own, which no plugin may see", dir, d)
	}
	if home == "" {
		return nil
	}
	bingo := filepath.Join(home, ".bingo")
	for _, b := range spellings(bingo) {
		for _, d := range spellings(dir) {
			switch {
			case b == d:
				return fmt.Errorf("%s is %s, which no plugin may see", dir, bingo)
			case within(d, b):
				return fmt.Errorf("%s lies inside %s, which no plugin may see", dir, bingo)
			}
		}
	}
	// Another spelling of it, found by identity.
	if inside, err := sameOrInside(dir, bingo); err == nil && inside {
		return fmt.Errorf("%s is %s or lies inside it, which no plugin may see", dir, bingo)
	}
	return nil
}

// spellings are p made absolute and p with its symlinks resolved (as far
// as it exists: a ~/.bingo not made yet resolves through its parent).
func spellings(p string) []string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return []string{filepath.Clean(p)}
	}
	out := []string{abs}
	dir, rest := abs, ""
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			if r := filepath.Join(real, rest); r != abs {
				out = append(out, r)
			}
			return out
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within reports whether p is dir or lies below it; both are clean and
// absolute.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// sameOrInside reports whether dir, or one of its parents, is the
// directory bingo, by identity.
func sameOrInside(dir, bingo string) (bool, error) {
	b, err := os.Stat(bingo)
	if err != nil {
		return false, err
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		d = real
	}
	for {
		if fi, err := os.Stat(d); err == nil && os.SameFile(fi, b) {
			return true, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false, nil
		}
		d = parent
	}
}
