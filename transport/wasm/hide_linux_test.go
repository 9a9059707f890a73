package wasm

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// What is hidden, reached by another path: a bind mount of ~/.bingo
// under ~/work (as macOS's /System/Volumes/Data firmlinks show it again
// under a mount of /), in a mount of ~ (inside a child) and in a mount of
// ~/work, which holds nothing hidden by its path. The bind is made in a mount
// namespace of one locked thread, which ends with it, and the calls are
// made on that thread; without the right to make one (not root, a
// container) the test skips.
func TestHidingFSBindMount(t *testing.T) {
	d := t.TempDir()
	bingo, alias := filepath.Join(d, ".bingo"), filepath.Join(d, "work", "alias")
	for _, dir := range []string{filepath.Join(bingo, "plugins"), alias} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bingo, "trust.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("alias/plugins", filepath.Join(d, "work", "p")); err != nil {
		t.Fatal(err)
	}
	var failed []string
	if skip := testutil.WithBindMount(bingo, alias, func() {
		for _, m := range []struct{ dir, in string }{{d, "work/"}, {filepath.Join(d, "work"), ""}} {
			root, err := os.OpenRoot(m.dir)
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			fsys, closer, err := mountFS(root, m.dir, true, []string{bingo})
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			failed = append(failed, aliasReached(fsys, m.in)...)
			if closer != nil {
				closer.Close()
			}
			root.Close()
		}
	}); skip != "" {
		t.Skip(skip)
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// aliasReached tries what is hidden under work/alias (a bind of it) and
// work/p (a link into it), in a mount whose path to work is in, and says
// what got through.
func aliasReached(fsys experimentalsys.FS, in string) (failed []string) {
	for _, p := range []string{"alias/trust.json", "alias", "alias/plugins", "p", "p/x"} {
		if f, e := fsys.OpenFile(in+p, experimentalsys.O_RDONLY, 0); e == 0 {
			f.Close()
			failed = append(failed, "opened "+in+p)
		}
		if _, e := fsys.Stat(in + p); e == 0 {
			failed = append(failed, "stat "+in+p)
		}
	}
	if f, e := fsys.OpenFile(in+"alias/plugins/planted.json", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600); e == 0 {
		f.Close()
		failed = append(failed, "created "+in+"alias/plugins/planted.json")
	}
	if e := fsys.Mkdir(in+"p/planted", 0o755); e == 0 {
		failed = append(failed, "made "+in+"p/planted")
	}
	if e := fsys.Rename(in+"alias/trust.json", in+"t.json"); e == 0 {
		failed = append(failed, "moved "+in+"alias/trust.json")
	}
	if _, e := fsys.Stat(in + "."); e != 0 {
		failed = append(failed, in+" itself: "+e.Error())
	}
	return failed
}

// A proc of its own mounted in a mount (a chroot's, a container root's)
// is the host's as /proc is: nothing on it is served, by path or through
// a link, in a mount that holds nothing hidden (a childFS) or something
// (a hidingFS, where it is the child itself or lies inside one), and a
// mount of it, or inside it, is refused. /proc/self/environ held bingo's
// environment, and /proc/self/mem, a regular file there, wrote into
// bingo. A device node made with mknod is not opened either.
func TestHostFSRefused(t *testing.T) {
	d := t.TempDir()
	bingo, procDir := filepath.Join(d, ".bingo"), filepath.Join(d, "work", "chroot", "proc")
	for _, dir := range []string{bingo, procDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("chroot/proc/self", filepath.Join(d, "work", "self")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(d, "work", "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Logf("mknod: %v (the device case is not tried)", err)
	}
	var failed []string
	if skip := testutil.WithProcMount(procDir, func() {
		for _, m := range []struct{ dir, in string }{
			{d, "work/"},                   // a hidingFS: work is a child
			{filepath.Join(d, "work"), ""}, // a childFS
		} {
			root, err := os.OpenRoot(m.dir)
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			fsys, closer, err := mountFS(root, m.dir, true, []string{bingo})
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			for _, p := range []string{"chroot/proc/self/environ", "self/environ", "chroot/proc/self/mem", "chroot/proc", "chroot/proc/self", "null"} {
				if f, e := fsys.OpenFile(m.in+p, experimentalsys.O_RDONLY, 0); e == 0 {
					f.Close()
					failed = append(failed, "opened "+m.in+p)
				}
			}
			if f, e := fsys.OpenFile(m.in+"chroot/proc/self/mem", experimentalsys.O_RDWR, 0); e == 0 {
				f.Close()
				failed = append(failed, "opened "+m.in+"chroot/proc/self/mem to write")
			}
			if _, e := fsys.Stat(m.in + "chroot/proc/self/environ"); e == 0 {
				failed = append(failed, "stat "+m.in+"chroot/proc/self/environ")
			}
			if f, e := fsys.OpenFile(m.in+"chroot", experimentalsys.O_RDONLY, 0); e != 0 {
				failed = append(failed, m.in+"chroot, not the host's: "+e.Error())
			} else {
				f.Close()
			}
			if closer != nil {
				closer.Close()
			}
			root.Close()
		}
		// The proc as a child of a hidingFS: the child itself is the
		// host's.
		root, err := os.OpenRoot(filepath.Join(d, "work", "chroot"))
		if err != nil {
			failed = append(failed, err.Error())
			return
		}
		defer root.Close()
		fsys, closer, err := mountFS(root, filepath.Join(d, "work", "chroot"), false, []string{filepath.Join(d, "work", "chroot", ".bingo")})
		if err != nil {
			failed = append(failed, err.Error())
			return
		}
		defer closer.Close()
		for _, p := range []string{"proc/self/environ", "proc", "proc/1/environ"} {
			if f, e := fsys.OpenFile(p, experimentalsys.O_RDONLY, 0); e == 0 {
				f.Close()
				failed = append(failed, "opened "+p+" in a hidingFS of chroot")
			}
		}
		for _, dir := range []string{procDir, filepath.Join(procDir, "self"), filepath.Join(procDir, "sys", "kernel")} {
			if got := HostDir(dir); got != procDir+" (proc)" {
				failed = append(failed, "HostDir("+dir+") = "+got)
			}
		}
		if got := HostDir(filepath.Join(d, "work")); got != "" {
			failed = append(failed, "HostDir(work) = "+got)
		}
	}); skip != "" {
		t.Skip(skip)
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// A FIFO, a device or a socket is refused before it is opened, since
// opening one acts already: here a writer's open of a FIFO would release
// a reader blocked in its own open (as opening a copy of /dev/watchdog
// would arm it), though the file was refused once open.
func TestSpecialNotOpened(t *testing.T) {
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0) // blocks until a writer opens it
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	root, err := os.OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fsys, _, err := mountFS(root, d, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the reader is in its open
	if f, e := fsys.OpenFile("fifo", experimentalsys.O_WRONLY, 0); e == 0 {
		f.Close()
		t.Error("opened the FIFO")
	} else if e != experimentalsys.ENOTSUP {
		t.Errorf("open of the FIFO: %v, want ENOTSUP", e)
	}
	select {
	case f := <-opened:
		f.Close()
		t.Error("the guest's open of the FIFO released its reader")
	case <-time.After(300 * time.Millisecond):
		// Release the reader.
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if f := <-opened; f != nil {
			f.Close()
		}
	}
}
