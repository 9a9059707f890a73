package wasm

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// hidingFS is a mount whose directory holds Config.Hide: the guest sees
// everything in it but Hide, which does not exist for it (not found,
// not listed, not created, not renamed onto or away).
//
// An os.Root follows a link anywhere inside its directory, so a link in
// the mount (work/b -> ../.bingo, one the project shipped or one a
// writable guest made) would lead into Hide: a check of the path as
// written is not enough. So the directories on the way from the mount to
// Hide (the spine: "" and "home" for a mount of / hiding /home/.bingo)
// are served name by name, never following a link in them, and every
// other entry of a spine directory, a child, is served through an os.Root
// of its own, which keeps its links inside it. Hide is a spine
// directory's entry, never inside a child: no link or ".." in a child
// reaches it.
//
// What a child root opens is checked to be the very directory that was
// looked at (its device and inode), so one swapped for a link between the
// look and the open is refused, not followed. The cost: a link that is an
// entry of a spine directory (~/link in a mount of the home directory) is
// not followed, and a rename between two children, or between a child and
// a spine directory, is refused (ENOTSUP), as across file systems.
type hidingFS struct {
	experimentalsys.UnimplementedFS
	base  *rootFS  // the mount's directory
	spine []string // from the mount to Hide; the last is Hide's name

	mu       sync.Mutex
	children map[string]*rootFS // by path from the mount
}

// hidden returns the path of hide under dir, as components, when dir holds
// hide (not when it is hide), resolving links in both as far as they
// exist: a Hide not made yet is hidden too, since a writable guest could
// make it.
func hidden(dir, hide string) []string {
	if hide == "" {
		return nil
	}
	d, h := resolved(dir), resolved(hide)
	rel, err := filepath.Rel(d, h)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}

// resolved is p absolute with its links resolved, through its deepest
// existing ancestor.
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir, rest := abs, ""
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// place says where p lies: in a spine directory (spine, with the
// directory's path), as an entry of one (entry), or in a child (child,
// with the child's path and the rest). Hide and what is inside it is
// ENOENT.
type place struct {
	kind        int // spineDir, entry or inChild
	dir, rest   string
	name, whole string
}

const (
	spineDir = iota
	entry
	inChild
)

func (h *hidingFS) locate(p string) (place, experimentalsys.Errno) {
	p = path.Clean("/" + p)[1:]
	if p == "" {
		return place{kind: spineDir, dir: "."}, 0
	}
	comps := strings.Split(p, "/")
	k := 0
	for k < len(comps) && k < len(h.spine) && comps[k] == h.spine[k] {
		if k == len(h.spine)-1 {
			return place{}, experimentalsys.ENOENT
		}
		k++
	}
	switch {
	case k == len(comps):
		return place{kind: spineDir, dir: p}, 0
	case k == len(comps)-1:
		return place{kind: entry, name: comps[k], whole: p}, 0
	}
	return place{kind: inChild, dir: strings.Join(comps[:k+1], "/"), rest: strings.Join(comps[k+1:], "/")}, 0
}

// child returns the root serving the child at dir, opened once: dir must
// be a directory, not a link, and the root must open that very directory.
func (h *hidingFS) child(dir string) (*rootFS, experimentalsys.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.children[dir]; ok {
		return c, 0
	}
	fi, err := h.base.root.Lstat(dir)
	if err != nil {
		return nil, errno(err)
	}
	if !fi.IsDir() {
		return nil, experimentalsys.ENOTDIR // a link, or a file, in a spine directory is not gone through
	}
	r, err := h.base.root.OpenRoot(dir)
	if err != nil {
		return nil, errno(err)
	}
	opened, err := r.Stat(".")
	if err != nil || !os.SameFile(fi, opened) {
		r.Close()
		return nil, experimentalsys.EAGAIN
	}
	c := &rootFS{root: r, writable: h.base.writable}
	h.children[dir] = c
	return c, 0
}

// forget drops the root of the child at dir, which a change of that entry
// (a rename, a removal) has made stale: the next use opens it afresh.
func (h *hidingFS) forget(dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.children[dir]; ok {
		_ = c.root.Close()
		delete(h.children, dir)
	}
}

// Close closes the children's roots (the base is closed by its owner).
func (h *hidingFS) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.children {
		_ = c.root.Close()
	}
	h.children = nil
	return nil
}

// notLink is an entry's Lstat when it is no link: what may be opened,
// followed or changed by a call that follows links.
func (h *hidingFS) notLink(name string) (fs.FileInfo, experimentalsys.Errno) {
	fi, err := h.base.root.Lstat(name)
	if err != nil {
		return nil, errno(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, experimentalsys.ELOOP
	}
	return fi, 0
}

func (h *hidingFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	pl, e := h.locate(p)
	if e != 0 {
		if flag&experimentalsys.O_CREAT != 0 {
			return nil, experimentalsys.EACCES
		}
		return nil, e
	}
	switch pl.kind {
	case inChild:
		c, e := h.child(pl.dir)
		if e != 0 {
			return nil, e
		}
		return c.OpenFile(pl.rest, flag, perm)
	case spineDir:
		if flag&writeFlags != 0 {
			return nil, experimentalsys.EISDIR
		}
		f, e := h.base.OpenFile(pl.dir, flag, perm)
		if e != 0 || pl.dir != h.hideParent() {
			return f, e
		}
		return &hidingDir{File: f, hide: h.spine[len(h.spine)-1]}, 0
	}
	// An entry of a spine directory: never a link followed.
	before, e := h.notLink(pl.whole)
	if e == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT != 0 {
		before = nil // made now: an O_EXCL create never follows a link
		flag |= experimentalsys.O_EXCL
	} else if e != 0 {
		return nil, e
	}
	f, e := h.base.OpenFile(pl.whole, flag, perm)
	if e != 0 || before == nil {
		return f, e
	}
	if st, e2 := f.Stat(); e2 != 0 || st.Ino != sys.NewStat_t(before).Ino || st.Dev != sys.NewStat_t(before).Dev {
		f.Close()
		return nil, experimentalsys.EAGAIN
	}
	return f, 0
}

// hideParent is the path of the spine directory that holds Hide.
func (h *hidingFS) hideParent() string {
	if len(h.spine) == 1 {
		return "."
	}
	return path.Join(h.spine[:len(h.spine)-1]...)
}

// hidingDir is the spine directory that holds Hide: its listing leaves
// Hide out.
type hidingDir struct {
	experimentalsys.File
	hide string
}

func (d *hidingDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	for {
		dirents, e := d.File.Readdir(n)
		out := dirents[:0]
		for _, de := range dirents {
			if de.Name != d.hide {
				out = append(out, de)
			}
		}
		if len(out) > 0 || len(dirents) == 0 || e != 0 {
			return out, e
		}
	}
}

// on runs op on p where it lies: in a child through its root, otherwise
// (a spine directory, or an entry of one) through the base.
func (h *hidingFS) on(p string, op func(fs *rootFS, p string, pl place) experimentalsys.Errno) experimentalsys.Errno {
	pl, e := h.locate(p)
	if e != 0 {
		return e
	}
	if pl.kind == inChild {
		c, e := h.child(pl.dir)
		if e != 0 {
			return e
		}
		return op(c, pl.rest, pl)
	}
	if pl.kind == spineDir {
		return op(h.base, pl.dir, pl)
	}
	return op(h.base, pl.whole, pl)
}

func (h *hidingFS) Lstat(p string) (st sys.Stat_t, e experimentalsys.Errno) {
	e = h.on(p, func(fs *rootFS, p string, _ place) (e experimentalsys.Errno) { st, e = fs.Lstat(p); return })
	return
}

// Stat follows a link only inside a child; an entry of a spine directory
// is described as it is.
func (h *hidingFS) Stat(p string) (st sys.Stat_t, e experimentalsys.Errno) {
	e = h.on(p, func(fs *rootFS, p string, pl place) (e experimentalsys.Errno) {
		if pl.kind == inChild {
			st, e = fs.Stat(p)
		} else {
			st, e = fs.Lstat(p)
		}
		return
	})
	return
}

func (h *hidingFS) Readlink(p string) (dst string, e experimentalsys.Errno) {
	e = h.on(p, func(fs *rootFS, p string, _ place) (e experimentalsys.Errno) { dst, e = fs.Readlink(p); return })
	return
}

// changes runs a change on p: never on a spine directory (renaming or
// removing one would move Hide), and on an entry of one only when it is
// not a link, for a change that follows links.
func (h *hidingFS) changes(p string, follows bool, op func(fs *rootFS, p string) experimentalsys.Errno) experimentalsys.Errno {
	pl, e := h.locate(p)
	if e == experimentalsys.ENOENT {
		return experimentalsys.EACCES // Hide is not there, and not to be made
	}
	return h.on(p, func(fs *rootFS, p string, pl2 place) experimentalsys.Errno {
		switch {
		case pl.kind == spineDir:
			return experimentalsys.EACCES
		case pl.kind == entry && follows:
			if _, e := h.notLink(p); e != 0 {
				return e
			}
		}
		if pl.kind == entry {
			defer h.forget(p)
		}
		return op(fs, p)
	})
}

func (h *hidingFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return h.changes(p, false, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Mkdir(p, perm) })
}

func (h *hidingFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return h.changes(p, true, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Chmod(p, perm) })
}

func (h *hidingFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return h.changes(p, true, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Utimens(p, atim, mtim) })
}

func (h *hidingFS) Rmdir(p string) experimentalsys.Errno {
	return h.changes(p, false, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Rmdir(p) })
}

func (h *hidingFS) Unlink(p string) experimentalsys.Errno {
	return h.changes(p, false, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Unlink(p) })
}

func (h *hidingFS) Symlink(target, link string) experimentalsys.Errno {
	return h.changes(link, false, func(fs *rootFS, p string) experimentalsys.Errno { return fs.Symlink(target, p) })
}

// Rename and Link work within one child, or among the entries of one
// spine directory; across, ENOTSUP.
func (h *hidingFS) Rename(from, to string) experimentalsys.Errno {
	return h.pair(from, to, func(fs *rootFS, from, to string) experimentalsys.Errno { return fs.Rename(from, to) })
}

func (h *hidingFS) Link(from, to string) experimentalsys.Errno {
	return h.pair(from, to, func(fs *rootFS, from, to string) experimentalsys.Errno { return fs.Link(from, to) })
}

func (h *hidingFS) pair(from, to string, op func(fs *rootFS, from, to string) experimentalsys.Errno) experimentalsys.Errno {
	a, ea := h.locate(from)
	b, eb := h.locate(to)
	switch {
	case ea != 0 || eb != 0:
		return experimentalsys.EACCES
	case a.kind == spineDir || b.kind == spineDir:
		return experimentalsys.EACCES
	case a.kind == entry && b.kind == entry:
		if path.Dir(a.whole) != path.Dir(b.whole) {
			return experimentalsys.ENOTSUP
		}
		defer h.forget(a.whole)
		defer h.forget(b.whole)
		return op(h.base, a.whole, b.whole)
	case a.kind == inChild && b.kind == inChild && a.dir == b.dir:
		c, e := h.child(a.dir)
		if e != 0 {
			return e
		}
		return op(c, a.rest, b.rest)
	}
	return experimentalsys.ENOTSUP
}
