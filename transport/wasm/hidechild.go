package wasm

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// childFS serves a child of a hidingFS (an entry of a spine directory
// that is neither on the way to something hidden nor hidden), and every
// mount that holds nothing hidden by its path (mountFS). Its os.Root
// keeps its links inside it, but what is hidden may be inside it under
// another path all the same: a bind mount of ~/.bingo, macOS's firmlinks
// (/System/Volumes/Data/Users/…/.bingo in a mount of /). So each call
// opens the directory holding its path's last name through the root,
// checks by identity that neither that directory nor any above it, up to
// the child or mount, is hidden, and acts on the last name at that directory's
// descriptor, never following a link there: a link is read, and its
// target resolved the same way.
type childFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	writable bool
	self     fileID          // the child directory's identity
	hidden   func() []fileID // what is hidden, by identity, now
}

func (c *childFS) isHidden(id fileID) bool { return slices.Contains(c.hidden(), id) }

// maxLinks bounds the links one path may lead through, as the systems do.
const maxLinks = 40

// split cuts p (from the child, as wazero gives it) into the directory
// holding its last name and that name; dir says whether p ended in a
// slash, which asks for a directory.
func split(p string) (parent, name string, dir bool) {
	dir = strings.HasSuffix(p, "/")
	p = path.Clean("/" + p)[1:]
	if p == "" {
		return ".", ".", true
	}
	return path.Dir(p), path.Base(p), dir
}

// at opens the directory parent through the root, checks it and runs op
// with its descriptor.
func (c *childFS) at(parent string, op func(dirfd int) error) experimentalsys.Errno {
	d, err := c.root.Open(parent)
	if err != nil {
		return errno(err)
	}
	defer d.Close()
	rc, err := d.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		if opErr = c.above(int(fd)); opErr == nil {
			opErr = ignoringEINTR(func() error { return op(int(fd)) })
		}
	}); err != nil {
		return errno(err)
	}
	return errno(opErr)
}

// above fails with ENOENT if the directory dirfd, or one above it up to
// the child, is hidden, and with EACCES if one of them, the child
// included, lies on a file system of the host's (hostFSOf): a proc
// mounted in a chroot under the working directory.
func (c *childFS) above(dirfd int) error {
	hidden := c.hidden()
	cur, own := dirfd, false
	defer func() {
		if own {
			unix.Close(cur)
		}
	}()
	var last fileID
	for i := 0; ; i++ {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return err
		}
		id := fileID{uint64(st.Dev), st.Ino}
		// A file system is looked at where the walk enters it: a
		// device is one file system while a descriptor on it is open.
		if (i == 0 || id.dev != last.dev) && hostFSOf(cur) != "" {
			return syscall.EACCES
		}
		switch {
		case id == c.self: // the child, or the mount: its caller's to allow
			return nil
		case slices.Contains(hidden, id):
			return syscall.ENOENT
		case i > 0 && id == last: // the file system's root
			return nil
		case i > 4096:
			return syscall.ELOOP
		}
		last = id
		up, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if own {
			unix.Close(cur)
		}
		cur, own = up, true
	}
}

// follow returns the path a link named name in parent leads to, from the
// child, or an error: a target that is absolute or climbs out of the
// child is refused, as os.Root refuses it.
func (c *childFS) follow(parent, name string) (string, experimentalsys.Errno) {
	var target string
	if e := c.at(parent, func(dirfd int) error {
		buf := make([]byte, maxPath)
		n, err := unix.Readlinkat(dirfd, name, buf)
		target = string(buf[:max(n, 0)])
		return err
	}); e != 0 {
		return "", e
	}
	p := path.Join(parent, target)
	if path.IsAbs(target) || p == ".." || strings.HasPrefix(p, "../") {
		return "", experimentalsys.EPERM
	}
	return p, 0
}

// isLinkErr reports whether an open with O_NOFOLLOW failed on a link.
func isLinkErr(e experimentalsys.Errno) bool {
	return e == experimentalsys.ELOOP || e == experimentalsys.ENOTDIR
}

func (c *childFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if !c.writable && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	of := osFlags(flag) | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	parent, name, dir := split(p)
	if dir {
		of |= unix.O_DIRECTORY
	}
	for range maxLinks {
		var fd int
		e := c.at(parent, func(dirfd int) (err error) {
			fd, err = openAt(dirfd, name, of, perm)
			return err
		})
		if isLinkErr(e) && flag&experimentalsys.O_NOFOLLOW == 0 && flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) != experimentalsys.O_CREAT|experimentalsys.O_EXCL {
			next, e2 := c.follow(parent, name)
			if e2 == experimentalsys.EINVAL { // not a link after all
				return nil, e
			}
			if e2 != 0 {
				return nil, e2
			}
			parent, name, _ = split(next)
			continue
		}
		if e != 0 {
			return nil, e
		}
		f := os.NewFile(uintptr(fd), path.Join(parent, name))
		if st, err := f.Stat(); err == nil && st.IsDir() && c.isHidden(idOf(st)) {
			f.Close()
			return nil, experimentalsys.ENOENT
		}
		return adopt(f, path.Join(parent, name), flag, perm)
	}
	return nil, experimentalsys.ELOOP
}

// lstat describes name in parent as it is, a link included.
func (c *childFS) lstat(parent, name string) (sys.Stat_t, experimentalsys.Errno) {
	var st unix.Stat_t
	if e := c.at(parent, func(dirfd int) error {
		return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); e != 0 {
		return sys.Stat_t{}, e
	}
	s := stat(&st)
	if s.Mode.IsDir() && c.isHidden(fileID{s.Dev, s.Ino}) {
		return sys.Stat_t{}, experimentalsys.ENOENT
	}
	return s, 0
}

func (c *childFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	parent, name, dir := split(p)
	st, e := c.lstat(parent, name)
	if e == 0 && dir && !st.Mode.IsDir() && st.Mode&fs.ModeSymlink == 0 {
		return sys.Stat_t{}, experimentalsys.ENOTDIR
	}
	return st, e
}

func (c *childFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	parent, name, dir := split(p)
	for range maxLinks {
		st, e := c.lstat(parent, name)
		if e != 0 {
			return st, e
		}
		if st.Mode&fs.ModeSymlink == 0 {
			if dir && !st.Mode.IsDir() {
				return sys.Stat_t{}, experimentalsys.ENOTDIR
			}
			return st, 0
		}
		next, e := c.follow(parent, name)
		if e != 0 {
			return sys.Stat_t{}, e
		}
		parent, name, _ = split(next)
	}
	return sys.Stat_t{}, experimentalsys.ELOOP
}

// stat is what fstatat says, as wazero's Stat_t.
func stat(st *unix.Stat_t) sys.Stat_t {
	m := fs.FileMode(st.Mode & 0o777)
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if uint32(st.Mode)&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if uint32(st.Mode)&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if uint32(st.Mode)&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return sys.Stat_t{
		Dev: uint64(st.Dev), Ino: st.Ino, Mode: m, Nlink: uint64(st.Nlink), Size: st.Size,
		Atim: st.Atim.Nano(), Mtim: st.Mtim.Nano(), Ctim: st.Ctim.Nano(),
	}
}

func (c *childFS) Readlink(p string) (string, experimentalsys.Errno) {
	parent, name, _ := split(p)
	var target string
	e := c.at(parent, func(dirfd int) error {
		buf := make([]byte, maxPath)
		n, err := unix.Readlinkat(dirfd, name, buf)
		target = string(buf[:max(n, 0)])
		return err
	})
	return target, e
}

// change runs op at the directory holding p's last name, if writable.
func (c *childFS) change(p string, op func(dirfd int, name string) error) experimentalsys.Errno {
	if !c.writable {
		return experimentalsys.EROFS
	}
	parent, name, _ := split(p)
	if name == "." {
		return experimentalsys.EINVAL // the child itself is its spine directory's to change
	}
	return c.at(parent, func(dirfd int) error { return op(dirfd, name) })
}

func (c *childFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return c.change(p, func(dirfd int, name string) error { return unix.Mkdirat(dirfd, name, uint32(perm.Perm())) })
}

func (c *childFS) Rmdir(p string) experimentalsys.Errno {
	return c.change(p, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
}

func (c *childFS) Unlink(p string) experimentalsys.Errno {
	return c.change(p, func(dirfd int, name string) error {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR {
			return syscall.EISDIR
		}
		return unix.Unlinkat(dirfd, name, 0)
	})
}

// Symlink refuses absolute targets, as rootFS does.
func (c *childFS) Symlink(target, link string) experimentalsys.Errno {
	if path.IsAbs(target) {
		return experimentalsys.EPERM
	}
	return c.change(link, func(dirfd int, name string) error { return unix.Symlinkat(target, dirfd, name) })
}

// Utimens follows a link as utimensat does, each step checked, and sets
// the times without following one.
func (c *childFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if !c.writable {
		return experimentalsys.EROFS
	}
	parent, name, _ := split(p)
	for range maxLinks {
		st, e := c.lstat(parent, name)
		if e != 0 {
			return e
		}
		if st.Mode&fs.ModeSymlink == 0 {
			if atim == experimentalsys.UTIME_OMIT {
				atim = st.Atim
			}
			if mtim == experimentalsys.UTIME_OMIT {
				mtim = st.Mtim
			}
			return c.at(parent, func(dirfd int) error {
				return unix.UtimesNanoAt(dirfd, name, []unix.Timespec{unix.NsecToTimespec(atim), unix.NsecToTimespec(mtim)}, unix.AT_SYMLINK_NOFOLLOW)
			})
		}
		next, e := c.follow(parent, name)
		if e != 0 {
			return e
		}
		parent, name, _ = split(next)
	}
	return experimentalsys.ELOOP
}

// Chmod changes what p leads to, opened without following a link at
// each step.
func (c *childFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if !c.writable {
		return experimentalsys.EROFS
	}
	f, e := c.OpenFile(p, experimentalsys.O_RDONLY, 0)
	return chmodOpened(f, e, perm)
}

// chmodOpened changes the mode of f, just opened (with e its error)
// without following a link, and closes it: the one chmod that cannot be
// sent through a link swapped in after the name was checked.
func chmodOpened(f experimentalsys.File, e experimentalsys.Errno, perm fs.FileMode) experimentalsys.Errno {
	if e != 0 {
		return e
	}
	defer f.Close()
	rf, ok := f.(*rootFile)
	if !ok {
		return experimentalsys.ENOTSUP
	}
	return errno(rf.f.Chmod(perm))
}

// Rename and Link act at the two directories, each checked.
func (c *childFS) Rename(from, to string) experimentalsys.Errno {
	return c.pair(from, to, func(fromfd int, fromName string, tofd int, toName string) error {
		return unix.Renameat(fromfd, fromName, tofd, toName)
	})
}

func (c *childFS) Link(from, to string) experimentalsys.Errno {
	return c.pair(from, to, func(fromfd int, fromName string, tofd int, toName string) error {
		return unix.Linkat(fromfd, fromName, tofd, toName, 0)
	})
}

func (c *childFS) pair(from, to string, op func(fromfd int, fromName string, tofd int, toName string) error) experimentalsys.Errno {
	if !c.writable {
		return experimentalsys.EROFS
	}
	fromParent, fromName, _ := split(from)
	toParent, toName, _ := split(to)
	if fromName == "." || toName == "." {
		return experimentalsys.EINVAL
	}
	var inner experimentalsys.Errno
	if e := c.at(fromParent, func(fromfd int) error {
		inner = c.at(toParent, func(tofd int) error { return op(fromfd, fromName, tofd, toName) })
		return nil
	}); e != 0 {
		return e
	}
	return inner
}

// openAt opens name at dirfd with the host's flags of, unless it is a
// device, a FIFO or a socket: those are not the guest's (adopt refuses
// them once open), and opening one may act already (a copy of
// /dev/watchdog made with mknod arms it).
func openAt(dirfd int, name string, of int, perm fs.FileMode) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		switch uint32(st.Mode) & unix.S_IFMT {
		case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
			return -1, syscall.ENOTSUP
		}
	}
	return unix.Openat(dirfd, name, of, uint32(perm.Perm()))
}

// ignoringEINTR retries op while it is interrupted.
func ignoringEINTR(op func() error) error {
	for {
		if err := op(); err != syscall.EINTR {
			return err
		}
	}
}
