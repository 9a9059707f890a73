package trust

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// A Sums reads a file version once: what it assumes (a cache's sums) is
// believed only for the version named, and never reaches the Sums it is a
// view of, so trust's digests rest on what the process read.
func TestSumsHashEachVersionOnce(t *testing.T) {
	root := newProject(t)
	m := install(t, root, "p", "1", `{"wasm": "plugin.wasm"}`)
	wasm := filepath.Join(pluginDir(root, "p"), "plugin.wasm")
	writeFile(t, wasm, "module v1")
	plain, err := Snapshot(Scope{Project: root}, m)
	if err != nil {
		t.Fatal(err)
	}

	sums := NewSums()
	first, err := sums.Snapshot(Scope{Project: root}, m)
	if err != nil || first.Digest != plain.Digest {
		t.Fatalf("through a Sums: %v %s, want %s", err, first.Digest, plain.Digest)
	}
	got, ok := sums.Get(wasm)
	if !ok || !strings.HasPrefix(first.Files[".bingo/plugins/p/plugin.wasm"], "file "+got.SHA256) {
		t.Fatalf("the Sums kept %+v for the module, files %v", got, first.Files)
	}

	// A view believing another sum for the same version digests with it:
	// proof that a known version is not read again.
	fake := got
	fake.SHA256 = strings.Repeat("0", 64)
	view := sums.Assuming([]FileSum{fake})
	sums2 := NewSums()
	view2 := sums2.Assuming([]FileSum{fake})
	if p, err := view2.Snapshot(Scope{Project: root}, m); err != nil || !strings.Contains(p.Files[".bingo/plugins/p/plugin.wasm"], fake.SHA256) {
		t.Fatalf("an assumed sum of the version on disk was not believed: %v %v", err, p.Files)
	}
	if p, _ := sums2.Snapshot(Scope{Project: root}, m); p.Digest != plain.Digest {
		t.Fatalf("what a view assumed reached the Sums under it: %s, want %s", p.Digest, plain.Digest)
	}
	// What the Sums hashed itself wins over what a view assumes.
	if p, _ := view.Snapshot(Scope{Project: root}, m); p.Digest != plain.Digest {
		t.Fatalf("an assumption overrode a sum the process read")
	}

	// A new version is read again, whatever is assumed of the old one.
	writeFile(t, wasm, "module v2, longer")
	view3 := NewSums().Assuming([]FileSum{got})
	now, err := view3.Snapshot(Scope{Project: root}, m)
	if err != nil {
		t.Fatal(err)
	}
	if fresh, _ := Snapshot(Scope{Project: root}, m); now.Digest != fresh.Digest || now.Digest == plain.Digest {
		t.Fatalf("a changed file was not read again")
	}
}

// Only a sum taken well after the file last changed is settled: a write
// within the clock's granularity of the hash could leave its version as it
// was.
func TestSumsSettled(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a")
	writeFile(t, f, "x")
	m := install(t, newProject(t), "p", "1", `{"command": "`+f+`"}`)
	sums := NewSums()
	if _, err := sums.Snapshot(Scope{Project: "/"}, m); err != nil {
		t.Fatal(err)
	}
	if got, ok := sums.Get(f); !ok || got.Settled {
		t.Fatalf("a file written just now: %+v, want unsettled", got)
	}

	// The rule's edge: settled from settleTime after the last change on.
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	changed := fileversion.Of(fi).Changed
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{{fileversion.SettleTime - time.Millisecond, false}, {fileversion.SettleTime, true}} {
		s := NewSums()
		s.remember(f, fi, "sum", changed.Add(c.after))
		if got, _ := s.Get(f); got.Settled != c.want {
			t.Errorf("hashed %v after the last change: settled %v, want %v", c.after, got.Settled, c.want)
		}
	}

	// A modification time set back does not settle a file just written:
	// on Linux the status-change time, which its owner cannot set, counts.
	if runtime.GOOS == "linux" {
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
		sums := NewSums()
		if _, err := sums.Snapshot(Scope{Project: "/"}, m); err != nil {
			t.Fatal(err)
		}
		if got, _ := sums.Get(f); got.Settled {
			t.Fatalf("a file whose mtime was set back an hour just now: %+v, want unsettled", got)
		}
	}
}
