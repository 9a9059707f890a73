package wasm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The times of an open file are set on the file, not on whatever its name
// leads to by then.
func TestFileTimesSetOnTheOpenFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startC(t, sharedHost, Config{Dir: dir, Writable: true})
	if got := p.ask("futimes " + a + " " + b); got != "ok" {
		t.Fatalf("futimes = %q", got)
	}
	epoch1 := time.Unix(1, 0)
	if fi, err := os.Stat(b); err != nil || !fi.ModTime().Equal(epoch1) {
		t.Errorf("the open file (now b) has mtime %v, want %v", fi.ModTime(), epoch1)
	}
	if fi, err := os.Stat(a); err != nil || fi.ModTime().Equal(epoch1) {
		t.Errorf("the new file under its name was re-timed instead")
	}
}
