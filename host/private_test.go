package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrivateKeepsBingoOutOfEveryMount(t *testing.T) {
	work := t.TempDir()
	home := filepath.Join(work, "home")
	elsewhere := filepath.Join(work, "elsewhere")
	for _, d := range []string{filepath.Join(home, ".bingo", "data"), filepath.Join(home, "work"), filepath.Join(elsewhere, "bingo")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	linkedHome := filepath.Join(work, "linked-home")
	if err := os.Symlink(home, linkedHome); err != nil {
		t.Fatal(err)
	}
	// A second home whose ~/.bingo is a link to elsewhere/bingo.
	home2 := filepath.Join(work, "home2")
	if err := os.MkdirAll(home2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "bingo"), filepath.Join(home2, ".bingo")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		home, dir string
		private   bool
	}{
		{home, home, false}, // holds it: mounted with it hidden (wasm.Config.Hide)
		{home, work, false},
		{home, "/", false},
		{home, filepath.Join(home, ".bingo"), true},
		{home, filepath.Join(home, ".bingo", "data"), true},
		{home, filepath.Join(home, "work", "..", ".bingo"), true},
		{home, linkedHome, false},
		{home, filepath.Join(home, "work"), false},
		{home, filepath.Join(home, ".bingo-not"), false},
		{home2, elsewhere, false},
		{home2, filepath.Join(elsewhere, "bingo"), true},
		{home2, home, false},
		{filepath.Join(work, "fresh"), filepath.Join(work, "fresh", ".bingo", "x"), true}, // no ~/.bingo yet
	} {
		if err := Private(c.home, c.dir); (err != nil) != c.private {
			t.Errorf("Private(%s, %s) = %v, want private %v", c.home, c.dir, err, c.private)
		}
	}
}
