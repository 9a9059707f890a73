//go:build unix

package capped

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO with no writer would block an ordinary open for ever.
func TestReadRefusesAFIFOWithoutWaiting(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	var nr NotRegularError
	if _, err := Read(fifo, 10); !errors.As(err, &nr) || nr.Mode.Type() != fs.ModeNamedPipe {
		t.Fatalf("a FIFO: %v, want NotRegularError", err)
	}
}

// What is not a regular file is looked at, never opened: a FIFO's writer
// waiting for a reader stays waiting. (Opening even without blocking would
// let it through, as it would arm a device whose open does something.)
func TestReadNeverOpensAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until a reader opens
		if err == nil {
			opened <- w
		}
		close(opened)
	}()
	time.Sleep(50 * time.Millisecond) // the writer is waiting
	var nr NotRegularError
	if _, err := Read(fifo, 10); !errors.As(err, &nr) {
		t.Fatalf("a FIFO: %v, want NotRegularError", err)
	}
	select {
	case <-opened:
		t.Error("Read opened the FIFO: its writer got through")
	case <-time.After(200 * time.Millisecond):
	}
	// Let the writer through, and wait for it.
	r, err := os.OpenFile(fifo, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for w := range opened {
		w.Close()
	}
}
