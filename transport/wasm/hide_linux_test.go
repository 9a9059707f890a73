package wasm

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// What is hidden, reached by another path inside a child: a bind mount
// of ~/.bingo under ~/work (as macOS's /System/Volumes/Data firmlinks
// show it again under a mount of /). The bind is made in a mount
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
	type result struct {
		skip   string
		failed []string
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
		root, err := os.OpenRoot(d)
		if err != nil {
			ch <- result{skip: err.Error()}
			return
		}
		defer root.Close()
		h := newHidingFS(&rootFS{root: root, writable: true}, d, []string{bingo})
		defer h.Close()
		var failed []string
		for _, p := range []string{"work/alias/trust.json", "work/alias", "work/alias/plugins", "work/p", "work/p/x"} {
			if f, e := h.OpenFile(p, experimentalsys.O_RDONLY, 0); e == 0 {
				f.Close()
				failed = append(failed, "opened "+p)
			}
			if _, e := h.Stat(p); e == 0 {
				failed = append(failed, "stat "+p)
			}
		}
		if f, e := h.OpenFile("work/alias/plugins/planted.json", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600); e == 0 {
			f.Close()
			failed = append(failed, "created work/alias/plugins/planted.json")
		}
		if e := h.Mkdir("work/p/planted", 0o755); e == 0 {
			failed = append(failed, "made work/p/planted")
		}
		if e := h.Rename("work/alias/trust.json", "work/t.json"); e == 0 {
			failed = append(failed, "moved work/alias/trust.json")
		}
		if _, e := h.Stat("work"); e != 0 {
			failed = append(failed, "work itself: "+e.Error())
		}
		ch <- result{failed: failed}
	}()
	r := <-ch
	if r.skip != "" {
		t.Skip(r.skip)
	}
	for _, f := range r.failed {
		t.Error(f)
	}
}
