package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
)

// Kept results do not pile up: past sessions' results older than
// resultsMaxAge go, then the oldest until what is left fits in
// resultsMaxBytes; this session's and another live session's (its lock
// held) stay whatever their age, and so does anything that is not a kept
// result. A past session's lock goes with its last result.
func TestPruneResults(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration, size int) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	day := 24 * time.Hour
	write("s1-1.txt", 8*day, 10)                // too old
	write("s2-1.txt", day, 10)                  // young, and within the size
	write("s3-1.txt", 3*day, resultsMaxBytes/2) // the older of two that do not fit together
	write("s4-1.txt", 2*day, resultsMaxBytes/2) // fits once s3's is gone
	write("now-1.txt", 30*day, 10)              // this session's
	write("notes.md", 30*day, 10)               // not a kept result
	write("s1.lock", 8*day, 0)                  // a past session's lock
	write("gone.lock", 8*day, 0)                // a past session's lock, its results gone
	write("live-1-2-3.txt", 9*day, 10)          // another running session's
	unlock, err := diskrecord.Lock(filepath.Join(dir, "live-1-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var notices []bridge.Notice
	a := &Agent{cfg: Config{Session: "now", ResultsDir: dir, Notify: func(n bridge.Notice) { notices = append(notices, n) }}}
	a.pruneResults(now)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"live-1-2-3.txt", "live-1-2.lock", "notes.md", "now-1.txt", "s2-1.txt", "s4-1.txt"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if len(notices) != 0 {
		t.Errorf("notices: %v", notices)
	}
	// No directory yet: nothing to do, nothing said.
	a.cfg.ResultsDir = filepath.Join(dir, "none")
	a.pruneResults(now)
	if len(notices) != 0 {
		t.Errorf("notices: %v", notices)
	}
}
