//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO named by the entry would block whoever opens it for reading until
// a writer comes; it must be recorded without being opened.
func TestFIFOIsRecordedWithoutOpeningIt(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "run")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("run", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(root, ".bingo", "settings.json")
	if err := syscall.Mkfifo(settings, 0o600); err != nil {
		t.Fatal(err)
	}
	settingsLink := filepath.Join(root, ".bingo", "settings-link.json")
	if err := os.Symlink("settings.json", settingsLink); err != nil {
		t.Fatal(err)
	}
	m := install(t, root, "deploy", "1", `{"command": "./run", "args": ["${PLUGIN_ROOT}/link"]}`)

	type result struct {
		p           Plugin
		s, sl       string
		err, e1, e2 error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.p, r.err = Snapshot(Scope{Project: root}, m)
		r.s, r.e1 = SettingsRecord(settings)
		r.sl, r.e2 = SettingsRecord(settingsLink)
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil || r.e1 != nil || r.e2 != nil {
			t.Fatal(r.err, r.e1, r.e2)
		}
		if got := r.p.Files[".bingo/plugins/deploy/run"]; got != "other fifo" {
			t.Errorf("fifo record = %q", got)
		}
		if got := r.p.Files[".bingo/plugins/deploy/link"]; got != "symlink run" {
			t.Errorf("link record = %q", got)
		}
		if r.s != "other fifo" || r.sl != "symlink settings.json -> other fifo" {
			t.Errorf("settings records = %q, %q", r.s, r.sl)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the goroutine can finish.
		for _, f := range []string{fifo, settings} {
			if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
		t.Fatal("Snapshot blocked on a FIFO")
	}
}

// The store is read only if it is a regular file of at most maxStoreSize
// bytes: a FIFO in its place is refused without waiting for a writer, and
// one too large is corrupt.
func TestStoreIsReadCapped(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	s := NewStore(home)
	if err := os.MkdirAll(filepath.Dir(s.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(s.Path(), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, _, err := s.Get(project); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO store: %v", err)
	}
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(s.Path(), maxStoreSize+1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(project); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a store past its cap: %v, want ErrCorrupt", err)
	}
}
