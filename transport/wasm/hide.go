package wasm

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// hostDirs are the host's own directories, never its files: /proc holds
// bingo's environment and memory (/proc/self/mem writes into the host),
// /sys and /dev the machine's. A mount that holds them hides them, as it
// does Config.Hide, and a directory that is one of them or lies inside
// one is never mounted.
var hostDirs = []string{"/proc", "/sys", "/dev"}

// hidingFS is a mount whose directory holds what is hidden (Config.Hide,
// hostDirs): the guest sees everything in it but those, which do not
// exist for it (not found, not listed, not created, not renamed onto or
// away).
//
// What is hidden is decided by identity (device and inode), not by
// spelling: on a case-insensitive file system ".BINGO" is ~/.bingo. Each
// name looked up in a directory on the way to something hidden is
// compared, by identity, with what is hidden there and with the
// directories on the way, under the name they were given and any other;
// inside a child, every directory a call passes through is (childFS).
//
// An os.Root follows a link anywhere inside its directory, so a link in
// the mount (work/b -> ../.bingo, one the project shipped or one a
// writable guest made) would lead into what is hidden: a check of the
// path as written is not enough. So the directories on the way from the
// mount to what is hidden (the spine: "" and "home" for a mount of /
// hiding /home/.bingo) are served name by name, never following a link in
// them, and every other entry of a spine directory, a child, is served
// through an os.Root of its own, which keeps its links inside it. What is
// hidden is a spine directory's entry, never inside a child by its own
// path: no link or ".." in a child reaches it, and another path to it (a
// bind mount) is refused by childFS.
//
// An entry of a spine directory is opened at that directory's descriptor
// with O_NOFOLLOW, in the one call that acts on it (O_CREAT, O_TRUNC): a
// name swapped for a link to ~/.bingo/settings.json between a look and
// the open is refused, not followed. What a child root opens is checked
// to be the very directory that was looked at, before anything is done
// in it. The cost: a link that is an entry of a spine directory (~/link
// in a mount of the home directory) is not followed, and a rename between
// two children, or between a child and a spine directory, is refused
// (ENOTSUP), as across file systems.
type hidingFS struct {
	experimentalsys.UnimplementedFS
	base *rootFS // the mount's directory
	top  *spine  // the mount's directory, on the way to all

	mu       sync.Mutex
	children map[string]*childFS // by path from the mount
}

// spine is a directory on the way from the mount to something hidden, or
// something hidden.
type spine struct {
	name   string // its name in its parent, as the host spells it
	path   string // from the mount, "." for the mount
	hidden bool
	kids   []*spine

	// guarded by hidingFS.mu
	ids []fileID // the identities it has been seen with
	dir *os.File // a spine directory's descriptor, once opened
}

type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) fileID {
	st := sys.NewStat_t(fi)
	return fileID{st.Dev, st.Ino}
}

// newHidingFS returns base as a hidingFS hiding hide (as far as dir, the
// directory base serves, holds them), or nil when dir holds none.
func newHidingFS(base *rootFS, dir string, hide []string) *hidingFS {
	top := &spine{path: "."}
	for _, h := range hide {
		comps := hidden(dir, h)
		if comps == nil {
			continue
		}
		n := top
		for i, c := range comps {
			if n.hidden {
				break // what is inside something hidden is hidden already
			}
			k := slices.IndexFunc(n.kids, func(k *spine) bool { return k.name == c })
			if k < 0 {
				n.kids = append(n.kids, &spine{name: c, path: path.Join(n.path, c)})
				k = len(n.kids) - 1
			}
			n = n.kids[k]
			if i == len(comps)-1 {
				n.hidden, n.kids = true, nil
			}
		}
	}
	if len(top.kids) == 0 {
		return nil
	}
	h := &hidingFS{base: base, top: top, children: map[string]*childFS{}}
	// Each is known by the identity it has now: a hidden directory
	// renamed later is still hidden.
	var note func(*spine)
	note = func(n *spine) {
		h.seen(n)
		for _, k := range n.kids {
			note(k)
		}
	}
	note(top)
	return h
}

// hidden returns the path of hide under dir, as components, when dir holds
// hide (not when it is hide), resolving links in both as far as they
// exist: a hide not made yet is hidden too, since a writable guest could
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

// HostDir returns the host directory (/proc, /sys or /dev) that dir is
// or lies inside, by identity (a bind of /proc elsewhere is /proc), or the
// directory of a file system of the host's (hostFSOf: a chroot's proc)
// that dir is or lies inside, with its kind, or "": Start refuses to
// mount such a directory.
func HostDir(dir string) string {
	var ids []fs.FileInfo
	var names []string
	for _, d := range hostDirs {
		if fi, err := os.Stat(d); err == nil {
			ids, names = append(ids, fi), append(names, d)
		}
	}
	for d := resolved(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			for i, h := range ids {
				if os.SameFile(fi, h) {
					return names[i]
				}
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	// The nearest on a host's file system, named by the top of it (where
	// it is mounted).
	for d := resolved(dir); ; d = filepath.Dir(d) {
		if kind := hostFSAt(d); kind != "" {
			for filepath.Dir(d) != d && hostFSAt(filepath.Dir(d)) == kind {
				d = filepath.Dir(d)
			}
			return d + " (" + kind + ")"
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// seen records the identity n's name has now, if it is a directory.
func (h *hidingFS) seen(n *spine) (fileID, bool) {
	fi, err := h.base.root.Lstat(n.path)
	if err != nil || !fi.IsDir() {
		return fileID{}, false
	}
	id := idOf(fi)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(n.ids, id) {
		n.ids = append(n.ids, id)
	}
	return id, true
}

// is reports whether id is n's: one it was seen with, or the one its name
// has now.
func (h *hidingFS) is(n *spine, id fileID) bool {
	h.mu.Lock()
	known := slices.Contains(n.ids, id)
	h.mu.Unlock()
	if known {
		return true
	}
	now, ok := h.seen(n)
	return ok && now == id
}

// kid returns the entry c of the spine directory n (at at) when it is on
// the way or hidden: by its name, or by its identity under another
// spelling.
func (h *hidingFS) kid(n *spine, at, c string) *spine {
	for _, k := range n.kids {
		if k.name == c {
			return k
		}
	}
	if len(n.kids) == 0 {
		return nil
	}
	fi, err := h.base.root.Lstat(path.Join(at, c))
	if err != nil || !fi.IsDir() {
		return nil // a link, a file or nothing is none of them
	}
	id := idOf(fi)
	for _, k := range n.kids {
		if h.is(k, id) {
			return k
		}
	}
	return nil
}

// place says where p lies: in a spine directory (spineDir, with the
// directory), as an entry of one (entry, with the directory and the
// entry's name), or in a child (inChild, with the child's path and the
// rest). What is hidden and what is inside it is ENOENT. Paths are as the
// guest spelled them: a spine directory may have another name now, which
// is still it.
type place struct {
	kind      int // spineDir, entry or inChild
	node      *spine
	at        string // the spine directory's path
	dir, rest string
	name      string
}

const (
	spineDir = iota
	entry
	inChild
)

// whole is the path from the mount of an entry, or of a spine directory.
func (pl place) whole() string {
	if pl.kind == entry {
		return path.Join(pl.at, pl.name)
	}
	return pl.at
}

func (h *hidingFS) locate(p string) (place, experimentalsys.Errno) {
	p = path.Clean("/" + p)[1:]
	n, at := h.top, "."
	if p == "" {
		return place{kind: spineDir, node: n, at: at}, 0
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		k := h.kid(n, at, c)
		switch {
		case k != nil && k.hidden:
			return place{}, experimentalsys.ENOENT
		case k != nil:
			n, at = k, path.Join(at, c)
			continue
		case i == len(comps)-1:
			return place{kind: entry, node: n, at: at, name: c}, 0
		}
		return place{kind: inChild, dir: path.Join(at, c), rest: strings.Join(comps[i+1:], "/")}, 0
	}
	return place{kind: spineDir, node: n, at: at}, 0
}

// child returns what serves the child at dir, opened once: dir must be a
// directory, not a link, and its root must open that very directory.
func (h *hidingFS) child(dir string) (*childFS, experimentalsys.Errno) {
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
	c := &childFS{root: r, writable: h.base.writable, self: idOf(fi), hidden: h.hiddenIDs}
	h.children[dir] = c
	return c, 0
}

// hiddenIDs are the identities of all that is hidden, each looked at
// afresh.
func (h *hidingFS) hiddenIDs() []fileID {
	var ids []fileID
	var walk func(*spine)
	walk = func(n *spine) {
		if n.hidden {
			h.seen(n)
			h.mu.Lock()
			ids = append(ids, n.ids...)
			h.mu.Unlock()
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(h.top)
	return ids
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

// dirOf returns the descriptor of the spine directory n (at at), opened
// once and checked to be n.
func (h *hidingFS) dirOf(n *spine, at string) (*os.File, experimentalsys.Errno) {
	h.mu.Lock()
	d := n.dir
	h.mu.Unlock()
	if d != nil {
		return d, 0
	}
	d, err := h.base.root.Open(at)
	if err != nil {
		return nil, errno(err)
	}
	fi, err := d.Stat()
	if err != nil || !h.is(n, idOf(fi)) {
		d.Close()
		return nil, experimentalsys.EAGAIN
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n.dir != nil { // opened meanwhile
		d.Close()
		return n.dir, 0
	}
	n.dir = d
	return d, 0
}

// Close closes the children's roots and the spine directories (the base
// is closed by its owner).
func (h *hidingFS) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.children {
		_ = c.root.Close()
	}
	h.children = nil
	var closeDirs func(*spine)
	closeDirs = func(n *spine) {
		if n.dir != nil {
			_ = n.dir.Close()
			n.dir = nil
		}
		for _, k := range n.kids {
			closeDirs(k)
		}
	}
	closeDirs(h.top)
	return nil
}

// at runs op with the descriptor of the spine directory where pl lies.
func (h *hidingFS) at(pl place, op func(fd int) error) experimentalsys.Errno {
	d, e := h.dirOf(pl.node, pl.at)
	if e != 0 {
		return e
	}
	rc, err := d.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if opErr = op(int(fd)); opErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return errno(err)
	}
	return errno(opErr)
}

// notLink is an entry's Lstat when it is no link: what may be changed by
// a call that follows links.
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
		f, e := h.base.OpenFile(pl.at, flag, perm)
		if e != 0 || !slices.ContainsFunc(pl.node.kids, func(k *spine) bool { return k.hidden }) {
			return f, e
		}
		return &hidingDir{File: f, fs: h, pl: pl}, 0
	}
	if !h.base.writable && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	// An entry of a spine directory: opened at the directory, never
	// following a link, in the call that creates or truncates it.
	var fd int
	if e := h.at(pl, func(dir int) (err error) {
		fd, err = openAt(dir, pl.name, osFlags(flag)|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, perm)
		return err
	}); e != 0 {
		return nil, e
	}
	return adopt(os.NewFile(uintptr(fd), pl.whole()), pl.whole(), flag, perm)
}

// hidingDir is a spine directory that holds something hidden: its
// listing leaves it out, under its own name or another.
type hidingDir struct {
	experimentalsys.File
	fs *hidingFS
	pl place
}

func (d *hidingDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	for {
		dirents, e := d.File.Readdir(n)
		out := dirents[:0]
		for _, de := range dirents {
			if k := d.fs.kid(d.pl.node, d.pl.at, de.Name); k == nil || !k.hidden {
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
func (h *hidingFS) on(p string, op func(fs experimentalsys.FS, p string, pl place) experimentalsys.Errno) experimentalsys.Errno {
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
	return op(h.base, pl.whole(), pl)
}

func (h *hidingFS) Lstat(p string) (st sys.Stat_t, e experimentalsys.Errno) {
	e = h.on(p, func(fs experimentalsys.FS, p string, _ place) (e experimentalsys.Errno) { st, e = fs.Lstat(p); return })
	return
}

// Stat follows a link only inside a child; an entry of a spine directory
// is described as it is.
func (h *hidingFS) Stat(p string) (st sys.Stat_t, e experimentalsys.Errno) {
	e = h.on(p, func(fs experimentalsys.FS, p string, pl place) (e experimentalsys.Errno) {
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
	e = h.on(p, func(fs experimentalsys.FS, p string, _ place) (e experimentalsys.Errno) {
		dst, e = fs.Readlink(p)
		return
	})
	return
}

// changes runs a change on p: never on a spine directory (renaming or
// removing one would move what is hidden); on an entry of one, a change
// that would follow a link is refused for a link and made at the
// directory, without following, by entryOp.
func (h *hidingFS) changes(p string, op func(fs experimentalsys.FS, p string) experimentalsys.Errno, entryOp func(pl place, fi fs.FileInfo) experimentalsys.Errno) experimentalsys.Errno {
	pl, e := h.locate(p)
	switch {
	case e == experimentalsys.ENOENT:
		return experimentalsys.EACCES // hidden, and not to be made
	case e != 0:
		return e
	case pl.kind == spineDir:
		return experimentalsys.EACCES
	case pl.kind == inChild:
		c, e := h.child(pl.dir)
		if e != 0 {
			return e
		}
		return op(c, pl.rest)
	}
	if !h.base.writable {
		return experimentalsys.EROFS
	}
	defer h.forget(pl.whole())
	if entryOp != nil {
		fi, e := h.notLink(pl.whole())
		if e != 0 {
			return e
		}
		return entryOp(pl, fi)
	}
	return op(h.base, pl.whole())
}

func (h *hidingFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return h.changes(p, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Mkdir(p, perm) }, nil)
}

func (h *hidingFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return h.changes(p, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Chmod(p, perm) },
		func(pl place, _ fs.FileInfo) experimentalsys.Errno {
			// No fchmodat that leaves links alone everywhere: the
			// entry is opened without following one, and changed.
			f, e := h.OpenFile(pl.whole(), experimentalsys.O_RDONLY, 0)
			return chmodOpened(f, e, perm)
		})
}

func (h *hidingFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return h.changes(p, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Utimens(p, atim, mtim) },
		func(pl place, fi fs.FileInfo) experimentalsys.Errno {
			// A time left as it is is the one it had when looked at.
			st := sys.NewStat_t(fi)
			if atim == experimentalsys.UTIME_OMIT {
				atim = st.Atim
			}
			if mtim == experimentalsys.UTIME_OMIT {
				mtim = st.Mtim
			}
			return h.at(pl, func(dir int) error {
				return unix.UtimesNanoAt(dir, pl.name, []unix.Timespec{unix.NsecToTimespec(atim), unix.NsecToTimespec(mtim)}, unix.AT_SYMLINK_NOFOLLOW)
			})
		})
}

func (h *hidingFS) Rmdir(p string) experimentalsys.Errno {
	return h.changes(p, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Rmdir(p) }, nil)
}

func (h *hidingFS) Unlink(p string) experimentalsys.Errno {
	return h.changes(p, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Unlink(p) }, nil)
}

func (h *hidingFS) Symlink(target, link string) experimentalsys.Errno {
	return h.changes(link, func(fs experimentalsys.FS, p string) experimentalsys.Errno { return fs.Symlink(target, p) }, nil)
}

// Rename and Link work within one child, or among the entries of one
// spine directory; across, ENOTSUP.
func (h *hidingFS) Rename(from, to string) experimentalsys.Errno {
	return h.pair(from, to, func(fs experimentalsys.FS, from, to string) experimentalsys.Errno { return fs.Rename(from, to) })
}

func (h *hidingFS) Link(from, to string) experimentalsys.Errno {
	return h.pair(from, to, func(fs experimentalsys.FS, from, to string) experimentalsys.Errno { return fs.Link(from, to) })
}

func (h *hidingFS) pair(from, to string, op func(fs experimentalsys.FS, from, to string) experimentalsys.Errno) experimentalsys.Errno {
	a, ea := h.locate(from)
	b, eb := h.locate(to)
	switch {
	case ea != 0 || eb != 0:
		return experimentalsys.EACCES
	case a.kind == spineDir || b.kind == spineDir:
		return experimentalsys.EACCES
	case a.kind == entry && b.kind == entry:
		if a.node != b.node {
			return experimentalsys.ENOTSUP
		}
		defer h.forget(a.whole())
		defer h.forget(b.whole())
		return op(h.base, a.whole(), b.whole())
	case a.kind == inChild && b.kind == inChild && a.dir == b.dir:
		c, e := h.child(a.dir)
		if e != 0 {
			return e
		}
		return op(c, a.rest, b.rest)
	}
	return experimentalsys.ENOTSUP
}
