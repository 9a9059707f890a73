package host

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// Another name for ~/.bingo is ~/.bingo: on a case-insensitive disk
// ~/.BINGO is, and so is a bind mount of it, the stand-in here (Linux
// has no case folding on these disks). The bind is made in a mount
// namespace of one locked thread, which ends with it; without the right
// to make one (not root, a container) the test skips.
func TestPrivateByIdentity(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	bingo, alias := filepath.Join(home, ".bingo"), filepath.Join(home, ".BINGO")
	for _, d := range []string{filepath.Join(bingo, "data"), alias} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		skip      string
		err, data error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
			ch <- result{skip: "unshare: " + err.Error()}
			return
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			ch <- result{skip: "private mounts: " + err.Error()}
			return
		}
		if err := syscall.Mount(bingo, alias, "", syscall.MS_BIND, ""); err != nil {
			ch <- result{skip: "bind: " + err.Error()}
			return
		}
		ch <- result{err: Private(home, alias), data: Private(home, filepath.Join(alias, "data"))}
	}()
	r := <-ch
	if r.skip != "" {
		t.Skip(r.skip)
	}
	if r.err == nil || r.data == nil {
		t.Errorf("Private of ~/.bingo under another name: %v; of its data dir: %v; want both refused", r.err, r.data)
	}
}

// The host's /proc, /sys and /dev are no working directory for a plugin.
func TestPrivateHostDirs(t *testing.T) {
	for _, dir := range []string{"/proc", "/proc/self", "/sys/kernel", "/dev"} {
		if err := Private("", dir); err == nil {
			t.Errorf("Private(%s) = nil, want it refused", dir)
		}
	}
	if err := Private("", t.TempDir()); err != nil {
		t.Errorf("Private(a temporary directory) = %v", err)
	}
}
