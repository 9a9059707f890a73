package wasm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// hidingOf returns a writable hidingFS of dir hiding hide.
func hidingOf(t *testing.T, dir string, hide ...string) *hidingFS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := newHidingFS(&rootFS{root: root, writable: true}, dir, hide)
	if h == nil {
		t.Fatalf("%s does not hold %s", dir, hide)
	}
	t.Cleanup(func() { h.Close(); root.Close() })
	return h
}

func names(t *testing.T, h *hidingFS, dir string) []string {
	t.Helper()
	f, e := h.OpenFile(dir, experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if e != 0 {
		t.Fatalf("open %s: %v", dir, e)
	}
	defer f.Close()
	dirents, e := f.Readdir(-1)
	if e != 0 {
		t.Fatalf("readdir %s: %v", dir, e)
	}
	var out []string
	for _, d := range dirents {
		out = append(out, d.Name)
	}
	return out
}

func TestHidingFSHidesWhatItHides(t *testing.T) {
	d := t.TempDir()
	for _, dir := range []string{"home/.bingo/plugins", "home/work", "other"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(d, "home/.bingo/trust.json"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(d, "home/work/notes.txt"), []byte("mine"), 0o600)
	os.Symlink(".bingo", filepath.Join(d, "home/link"))
	os.Symlink("../.bingo", filepath.Join(d, "home/work/b"))
	h := hidingOf(t, d, filepath.Join(d, "home/.bingo"))

	if got := names(t, h, "."); !slices.Contains(got, "home") || !slices.Contains(got, "other") {
		t.Errorf("the mount lists %v", got)
	}
	if got := names(t, h, "home"); slices.Contains(got, ".bingo") || !slices.Contains(got, "work") {
		t.Errorf("home lists %v", got)
	}
	if f, e := h.OpenFile("home/work/notes.txt", experimentalsys.O_RDONLY, 0); e != 0 {
		t.Errorf("a file beside it: %v", e)
	} else {
		f.Close()
	}
	for _, p := range []string{"home/.bingo/trust.json", "home/.bingo", "home/link/trust.json", "home/work/b/trust.json", "home/work/../.bingo/trust.json"} {
		if f, e := h.OpenFile(p, experimentalsys.O_RDONLY, 0); e == 0 {
			f.Close()
			t.Errorf("opened %s", p)
		}
		if f, e := h.OpenFile(p, experimentalsys.O_WRONLY|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o600); e == 0 {
			f.Close()
			t.Errorf("wrote %s", p)
		}
		if _, e := h.Stat(p); e == 0 && p != "home/link/trust.json" {
			t.Errorf("stat %s", p)
		}
	}
	for what, e := range map[string]experimentalsys.Errno{
		"mkdir hidden":           h.Mkdir("home/.bingo", 0o755),
		"rename it away":         h.Rename("home/.bingo", "home/x"),
		"rename onto it":         h.Rename("other", "home/.bingo"),
		"rename a spine dir":     h.Rename("home", "h2"),
		"remove a spine dir":     h.Rmdir("home"),
		"link a file in it":      h.Link("home/.bingo/trust.json", "home/t"),
		"link over it":           h.Symlink("work", "home/.bingo"),
		"chmod it":               h.Chmod("home/.bingo", 0o777),
		"chmod through a link":   h.Chmod("home/link", 0o777),
		"unlink a file in it":    h.Unlink("home/.bingo/trust.json"),
		"rename across children": h.Rename("home/work/notes.txt", "other/notes.txt"),
	} {
		if e == 0 {
			t.Errorf("%s: allowed", what)
		}
	}
	if b, err := os.ReadFile(filepath.Join(d, "home/.bingo/trust.json")); err != nil || string(b) != "{}" {
		t.Fatalf("trust.json: %q, %v", b, err)
	}
	// What is not on the way to it works as in any mount.
	if e := h.Rename("home/work/notes.txt", "home/work/n.txt"); e != 0 {
		t.Errorf("rename in a child: %v", e)
	}
	if e := h.Mkdir("home/new", 0o755); e != 0 {
		t.Errorf("mkdir beside it: %v", e)
	}
	// A child renamed is looked up afresh: its old name is gone.
	if e := h.Rename("home/work", "home/w2"); e != 0 {
		t.Errorf("rename a child: %v", e)
	}
	if _, e := h.Stat("home/work/n.txt"); e == 0 {
		t.Errorf("home/work/n.txt still there after home/work was renamed")
	}
	if _, e := h.Stat("home/w2/n.txt"); e != 0 {
		t.Errorf("home/w2/n.txt: %v", e)
	}
}

// What is hidden, and the directories on the way to it, are known by
// identity: renamed after the mount (as a case-insensitive file system
// spells them any way), they are what they were.
func TestHidingFSByIdentity(t *testing.T) {
	d := t.TempDir()
	for _, dir := range []string{"home/.bingo", "home/work", "srv/x/y"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(d, "home/.bingo/trust.json"), []byte("{}"), 0o600)
	h := hidingOf(t, d, filepath.Join(d, "home/.bingo"), filepath.Join(d, "srv/x"))
	for _, mv := range [][2]string{{"home/.bingo", "home/.BINGO"}, {"home", "HOME"}, {"srv", "SRV"}} {
		if err := os.Rename(filepath.Join(d, mv[0]), filepath.Join(d, mv[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"HOME/.BINGO/trust.json", "HOME/.BINGO", "SRV/x/y", "SRV/x"} {
		if _, e := h.Stat(p); e != experimentalsys.ENOENT {
			t.Errorf("stat %s: %v, want ENOENT", p, e)
		}
		if f, e := h.OpenFile(p+"/new", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600); e == 0 {
			f.Close()
			t.Errorf("created %s/new", p)
		}
	}
	if got := names(t, h, "HOME"); slices.Contains(got, ".BINGO") || !slices.Contains(got, "work") {
		t.Errorf("HOME lists %v", got)
	}
	if got := names(t, h, "SRV"); len(got) != 0 {
		t.Errorf("SRV lists %v", got)
	}
	for what, e := range map[string]experimentalsys.Errno{
		"rename a spine dir by another name": h.Rename("HOME", "h2"),
		"rename hidden by another name":      h.Rename("HOME/.BINGO", "HOME/b"),
		"remove a spine dir by another name": h.Rmdir("SRV"),
	} {
		if e == 0 {
			t.Errorf("%s: allowed", what)
		}
	}
	if _, e := h.Stat("HOME/work"); e != 0 {
		t.Errorf("HOME/work: %v", e)
	}
}

// A name swapped between a file and a link into what is hidden, while it
// is opened with O_TRUNC or O_CREAT and re-timed: nothing hidden changes.
func TestHidingFSRace(t *testing.T) {
	d := t.TempDir()
	bingo := filepath.Join(d, ".bingo")
	if err := os.MkdirAll(bingo, 0o755); err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(bingo, "trust.json")
	os.WriteFile(trust, []byte("{}"), 0o600)
	old := time.Unix(1_000_000_000, 0)
	os.Chtimes(trust, old, old)
	h := hidingOf(t, d, bingo)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := ".bingo/trust.json"
			if i%2 == 1 {
				target = ".bingo/new.json"
			}
			os.Symlink(target, filepath.Join(d, "l"))
			os.Rename(filepath.Join(d, "l"), filepath.Join(d, "t"))
			os.WriteFile(filepath.Join(d, "f"), nil, 0o600)
			os.Rename(filepath.Join(d, "f"), filepath.Join(d, "t"))
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		for _, flag := range []experimentalsys.Oflag{experimentalsys.O_TRUNC, experimentalsys.O_CREAT} {
			if f, e := h.OpenFile("t", experimentalsys.O_WRONLY|flag, 0o600); e == 0 {
				f.Close()
			}
		}
		h.Utimens("t", time.Now().UnixNano(), time.Now().UnixNano())
	}
	close(stop)
	<-done
	if b, err := os.ReadFile(trust); err != nil || string(b) != "{}" {
		t.Errorf("trust.json: %q, %v", b, err)
	}
	if fi, err := os.Stat(trust); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("trust.json re-timed: %v", fi.ModTime())
	}
	if _, err := os.Lstat(filepath.Join(bingo, "new.json")); err == nil {
		t.Errorf("new.json created in what is hidden")
	}
}

// A mount of what is hidden, or of a directory inside it (a plugin's data
// directory in ~/.bingo), is the caller's to make: it serves what it holds.
func TestMountOfHiddenServes(t *testing.T) {
	bingo := filepath.Join(t.TempDir(), ".bingo")
	data := filepath.Join(bingo, "data", "plugins", "p")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{bingo, data} {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		fsys, closer, err := mountFS(root, dir, true, []string{bingo})
		if err != nil || closer != nil {
			t.Fatalf("mountFS(%s) = %v, %v", dir, closer, err)
		}
		if f, e := fsys.OpenFile("f", experimentalsys.O_RDWR, 0); e != 0 {
			t.Errorf("a mount of %s: open f: %v", dir, e)
		} else {
			f.Close()
		}
		if e := fsys.Mkdir("d", 0o700); e != 0 {
			t.Errorf("a mount of %s: mkdir d: %v", dir, e)
		}
		root.Close()
	}
}
