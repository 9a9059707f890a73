package wasm

import (
	"os"
	"path/filepath"
	"testing"
)

// home makes a home directory holding .bingo/secret.txt and work/notes.txt,
// and returns it with its .bingo.
func home(t *testing.T) (home, bingo string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	bingo = filepath.Join(home, ".bingo")
	for _, f := range []struct{ path, data string }{
		{filepath.Join(bingo, "secret.txt"), "secret"},
		{filepath.Join(home, "work", "notes.txt"), "notes"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home, bingo
}

// A directory read again from cookie 0 is the directory that was opened,
// whatever its name now leads to: here a link to ~/.bingo put in its
// place after it was renamed. (wazero rewinds by reopening the name.)
func TestRewoundDirectoryIsTheSame(t *testing.T) {
	home, bingo := home(t)
	p := startC(t, sharedHost, Config{Dir: home, Writable: true, Hide: bingo})
	work := filepath.Join(home, "work")
	got := p.ask("rewind " + work + " " + filepath.Join(home, "moved") + " .bingo")
	if got != "ok notes.txt" {
		t.Errorf("the rewound directory lists %q, want the one opened: ok notes.txt", got)
	}
	if target, err := os.Readlink(work); err != nil || target != ".bingo" {
		t.Fatalf("the guest did not put its link in place: %q, %v", target, err)
	}
	// And in a mount that hides nothing, the same.
	plain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plain, "d", "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(plain, "other", "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	q := startC(t, sharedHost, Config{Dir: plain, Writable: true})
	if got := q.ask("rewind " + filepath.Join(plain, "d") + " " + filepath.Join(plain, "d2") + " other"); got != "ok inside" {
		t.Errorf("the rewound directory lists %q, want ok inside", got)
	}
}
