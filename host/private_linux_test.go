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
