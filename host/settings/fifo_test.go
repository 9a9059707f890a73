//go:build unix

package settings

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO in the place of a settings file is refused at once: opening it
// for reading would wait for a writer that never comes.
func TestFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "settings.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		// Should the test fail by hanging, free the reader it left.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Load(fifo)
		LoadLayered(fifo, Project{})
		LoadLayered("", Project{File: fifo})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO settings file hung")
	}
	checkRefused(t, fifo, errNotRegular) // known now not to hang
}
