package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
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
	var err, data error
	if skip := testutil.WithBindMount(bingo, alias, func() {
		err, data = Private(home, alias), Private(home, filepath.Join(alias, "data"))
	}); skip != "" {
		t.Skip(skip)
	}
	if err == nil || data == nil {
		t.Errorf("Private of ~/.bingo under another name: %v; of its data dir: %v; want both refused", err, data)
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

// A proc of its own (a chroot's) is the host's as /proc is: neither it
// nor a directory inside it is a working directory for a plugin.
func TestPrivateHostFS(t *testing.T) {
	proc := filepath.Join(t.TempDir(), "chroot", "proc")
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	var errs []error
	if skip := testutil.WithProcMount(proc, func() {
		errs = []error{Private("", proc), Private("", filepath.Join(proc, "self")), Private("", filepath.Dir(proc))}
	}); skip != "" {
		t.Skip(skip)
	}
	if errs[0] == nil || errs[1] == nil {
		t.Errorf("Private of a chroot's proc: %v; of its self: %v; want both refused", errs[0], errs[1])
	}
	if errs[2] != nil {
		t.Errorf("Private of the chroot = %v, want it allowed", errs[2])
	}
}
