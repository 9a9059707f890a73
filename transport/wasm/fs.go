package wasm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// mounts builds the guest's file systems: Config.Dir first (a Go guest
// takes its first pre-opened directory as its working directory), then
// Config.Mounts, each through its own os.Root, and a mount that holds
// Config.Hide or one of hostDirs through a hidingFS, any other through a
// childFS (mountFS). A directory that is one of hostDirs or lies inside
// one is refused. It returns what to close
// when the instance ends; on an error it has closed it.
//
// Config.Dir is pre-opened a second time, last, as the guest's "/" (the
// name wazero gives a mount at "."), the same mount under another name.
// wasi-libc, and so C and Rust, keeps its own working directory, "/"
// until the guest calls chdir, and serves a path by the longest
// pre-opened name it starts with: without a "/" a relative path matched
// none and failed (ENOTCAPABLE in C, "failed to find a pre-opened file
// descriptor" in Rust). A path under another mount still goes to that
// mount, being longer; an absolute path under none now names a file in
// the working directory, as a guest run by wasmtime --dir . sees it.
func (t *Transport) mounts() (wazero.FSConfig, []io.Closer, error) {
	fsc := wazero.NewFSConfig()
	all := t.cfg.Mounts
	if t.cfg.Dir != "" {
		all = append([]Mount{{Dir: t.cfg.Dir, Writable: t.cfg.Writable}}, all...)
	}
	hide := append([]string{t.cfg.Hide}, hostDirs...)
	var roots []io.Closer
	var dirMount experimentalsys.FS // Config.Dir's, once mounted
	seen := map[string]bool{}
	for _, m := range all {
		dir, err := filepath.Abs(m.Dir)
		if err == nil && seen[dir] {
			continue
		}
		if err == nil {
			if h := HostDir(dir); h != "" {
				err = fmt.Errorf("%s is the host's, never mounted", h)
			}
		}
		var root *os.Root
		if err == nil {
			root, err = os.OpenRoot(dir)
		}
		if err != nil {
			for _, r := range roots {
				_ = r.Close()
			}
			return nil, nil, fmt.Errorf("mount %s: %w", m.Dir, err)
		}
		seen[dir] = true
		roots = append(roots, root)
		mount, closer, err := mountFS(root, dir, m.Writable, hide)
		if err != nil {
			for _, r := range roots {
				_ = r.Close()
			}
			return nil, nil, fmt.Errorf("mount %s: %w", m.Dir, err)
		}
		if closer != nil {
			roots = append(roots, closer)
		}
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(cappedFS{mount}, filepath.ToSlash(dir))
		if t.cfg.Dir != "" && dirMount == nil {
			dirMount = mount
		}
	}
	if dirMount != nil && !seen["/"] {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(cappedFS{dirMount}, "/")
	}
	return fsc, roots, nil
}

// mountFS serves root, the directory dir: through a hidingFS when dir
// holds something of hide by its path, else as a childFS, which keeps
// out what is hidden but reached by another path (a bind mount of
// ~/.bingo in the working directory). The closer is the hidingFS's.
func mountFS(root *os.Root, dir string, writable bool, hide []string) (experimentalsys.FS, io.Closer, error) {
	base := &rootFS{root: root, writable: writable}
	if h := newHidingFS(base, dir, hide); h != nil {
		return h, h, nil
	}
	fi, err := root.Stat(".")
	if err != nil {
		return nil, nil, err
	}
	return &childFS{root: root, writable: writable, self: idOf(fi), hidden: func() []fileID { return identities(hide) }}, nil, nil
}

// identities are those of the directories paths name now (links
// followed), of those that exist.
func identities(paths []string) []fileID {
	var ids []fileID
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			ids = append(ids, idOf(fi))
		}
	}
	return ids
}

// maxPath is the longest path, in bytes, a guest may pass to a call on a
// mount (PATH_MAX on Linux): a longer one is refused with ENAMETOOLONG
// before anything walks it. wazero has copied it out of the guest's memory
// once by then (its path_open reads the path before any FS is asked); the
// walk is what cost gigabytes, a 64 MB path "a/a/…" splitting into 32
// million names.
const maxPath = 4096

// cappedFS refuses, on every call that takes paths, a path longer than
// maxPath.
type cappedFS struct{ experimentalsys.FS }

func long(paths ...string) bool {
	for _, p := range paths {
		if len(p) > maxPath {
			return true
		}
	}
	return false
}

func (c cappedFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if long(p) {
		return nil, experimentalsys.ENAMETOOLONG
	}
	return c.FS.OpenFile(p, flag, perm)
}

func (c cappedFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if long(p) {
		return sys.Stat_t{}, experimentalsys.ENAMETOOLONG
	}
	return c.FS.Lstat(p)
}

func (c cappedFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if long(p) {
		return sys.Stat_t{}, experimentalsys.ENAMETOOLONG
	}
	return c.FS.Stat(p)
}

func (c cappedFS) Readlink(p string) (string, experimentalsys.Errno) {
	if long(p) {
		return "", experimentalsys.ENAMETOOLONG
	}
	return c.FS.Readlink(p)
}

// unlessLong runs op unless one of paths is too long.
func unlessLong(op func() experimentalsys.Errno, paths ...string) experimentalsys.Errno {
	if long(paths...) {
		return experimentalsys.ENAMETOOLONG
	}
	return op()
}

func (c cappedFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Mkdir(p, perm) }, p)
}

func (c cappedFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Chmod(p, perm) }, p)
}

func (c cappedFS) Rename(from, to string) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Rename(from, to) }, from, to)
}

func (c cappedFS) Rmdir(p string) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Rmdir(p) }, p)
}

func (c cappedFS) Unlink(p string) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Unlink(p) }, p)
}

func (c cappedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Link(oldPath, newPath) }, oldPath, newPath)
}

func (c cappedFS) Symlink(target, link string) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Symlink(target, link) }, target, link)
}

func (c cappedFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return unlessLong(func() experimentalsys.Errno { return c.FS.Utimens(p, atim, mtim) }, p)
}

// rootFS is a mount's directory through an os.Root: the base a hidingFS
// serves its spine directories through (every other mount is a childFS,
// which resolves through an os.Root too).
//
// wazero's own directory mount already refuses paths that climb out with
// "..", but it follows symbolic links wherever they point, so a link inside
// Dir (one a project ships, or one a writable guest creates) would read any
// file the host can. os.Root resolves every path, links included, inside
// the directory and refuses the rest; that is the jail. Without writable,
// every operation that would change something answers EROFS.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	writable bool
}

// rootPath turns wazero's cleaned, relative path into one for os.Root.
func rootPath(p string) string {
	if p == "" || p == "/" {
		return "."
	}
	return p
}

// errno maps an os error to the guest's errno. os.Root's refusal of a path
// that escapes the directory is no syscall error; the guest sees EPERM
// (WASI's "not capable").
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var se syscall.Errno
	switch {
	case errors.As(err, &se),
		errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist),
		errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrInvalid),
		errors.Is(err, fs.ErrClosed), errors.Is(err, io.EOF):
		return experimentalsys.UnwrapOSError(err)
	}
	return experimentalsys.EPERM
}

const writeFlags = experimentalsys.O_RDWR | experimentalsys.O_WRONLY | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND

func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if !r.writable && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	// O_NONBLOCK so that opening a FIFO in Dir returns at once instead of
	// parking a host thread that no Kill can reach; the open file is then
	// refused unless it is a regular file or a directory.
	f, err := r.root.OpenFile(rootPath(p), osFlags(flag)|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, errno(err)
	}
	return adopt(f, rootPath(p), flag, perm)
}

// osFlags are WASI's open flags as the host's.
func osFlags(flag experimentalsys.Oflag) int {
	var of int
	switch {
	case flag&experimentalsys.O_RDWR != 0:
		of = os.O_RDWR
	case flag&experimentalsys.O_WRONLY != 0:
		of = os.O_WRONLY
	default:
		of = os.O_RDONLY
	}
	for _, m := range [...]struct {
		w experimentalsys.Oflag
		o int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
		{experimentalsys.O_SYNC, os.O_SYNC},
		{experimentalsys.O_DIRECTORY, syscall.O_DIRECTORY},
		{experimentalsys.O_NOFOLLOW, syscall.O_NOFOLLOW},
	} {
		if flag&m.w != 0 {
			of |= m.o
		}
	}
	return of
}

// adopt makes f, just opened, the guest's: a regular file or a directory,
// nothing else (a FIFO, a device), and none on a file system of the
// host's (hostFSOf: /proc/<pid>/mem is a regular file).
func adopt(f *os.File, p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if st, err := f.Stat(); err != nil || !(st.Mode().IsRegular() || st.IsDir()) {
		f.Close()
		return nil, experimentalsys.ENOTSUP
	}
	if onHostFS(f) {
		f.Close()
		return nil, experimentalsys.EACCES
	}
	return newRootFile(f, p, flag, perm)
}

// onHostFS reports whether f lies on a file system of the host's, or
// cannot be told not to.
func onHostFS(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	kind := ""
	if err := rc.Control(func(fd uintptr) { kind = hostFSOf(int(fd)) }); err != nil {
		return true
	}
	return kind != ""
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(rootPath(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(rootPath(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	dst, err := r.root.Readlink(rootPath(p))
	return dst, errno(err)
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	return errno(r.root.Mkdir(rootPath(p), perm))
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	return errno(r.root.Chmod(rootPath(p), perm))
}

func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	return errno(r.root.Rename(rootPath(from), rootPath(to)))
}

func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Lstat(rootPath(p))
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(r.root.Remove(rootPath(p)))
}

func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Lstat(rootPath(p))
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(r.root.Remove(rootPath(p)))
}

func (r *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	return errno(r.root.Link(rootPath(oldPath), rootPath(newPath)))
}

// Symlink refuses absolute targets, as wazero's own mount does: inside the
// guest they would name guest paths, on the host they name host paths.
// A relative target may point anywhere; following it is what the root
// confines.
func (r *rootFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	if path.IsAbs(oldPath) {
		return experimentalsys.EPERM
	}
	return errno(r.root.Symlink(oldPath, rootPath(linkName)))
}

func (r *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if !r.writable {
		return experimentalsys.EROFS
	}
	return errno(r.root.Chtimes(rootPath(p), utime(atim), utime(mtim)))
}

// utime maps WASI's "leave unchanged" to os.Chtimes's zero time.
func utime(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// rootFile is a file opened through the root. Every path operation went
// through rootFS, so the file itself needs no further checks. wazero's
// adapter for an fs.File does the WASI bookkeeping (stat caching, readdir
// with inodes, pread/pwrite); rootFile adds what the adapter cannot know
// from an fs.File: truncate, sync, the append flag, and a rewind of the
// directory it holds.
type rootFile struct {
	experimentalsys.File
	f      *os.File
	append bool
}

// newRootFile wraps f in wazero's adapter.
func newRootFile(f *os.File, p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	adapted, e := (&sysfs.AdaptFS{FS: &openedFS{f: f}}).OpenFile(p, flag, perm)
	if e != 0 {
		_ = f.Close()
		return nil, e
	}
	return &rootFile{File: adapted, f: f, append: flag&experimentalsys.O_APPEND != 0}, 0
}

// openedFS hands the adapter the file already opened (with the real flags,
// which the adapter cannot pass on). The adapter rewinds a directory
// (fd_readdir from cookie 0) by opening its name again, but the name may
// lead elsewhere by then (a link to ~/.bingo in place of a directory
// renamed away): every open after the first rewinds the file already
// open instead, whatever name it is given. (An os.File forgets what it
// read of a directory on Seek.)
type openedFS struct {
	f      *os.File
	handed bool
}

func (o *openedFS) Open(string) (fs.File, error) {
	if o.handed {
		if _, err := o.f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	o.handed = true
	return held{o.f}, nil
}

// held is the file as the adapter holds it: the adapter closes it on a
// rewind, before it uses the one the rewind opened, so closing it is
// rootFile's, at the end.
type held struct{ *os.File }

func (held) Close() error { return nil }

func (r *rootFile) Close() experimentalsys.Errno {
	_ = r.File.Close()
	return errno(r.f.Close())
}

func (r *rootFile) IsAppend() bool { return r.append }

// SetAppend can only confirm the mode the file was opened with: changing
// it would need fcntl, and no Go guest asks.
func (r *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if enable == r.append {
		return 0
	}
	return experimentalsys.ENOSYS
}

func (r *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return errno(r.f.Truncate(size))
}

func (r *rootFile) Sync() experimentalsys.Errno     { return errno(r.f.Sync()) }
func (r *rootFile) Datasync() experimentalsys.Errno { return errno(r.f.Sync()) }
