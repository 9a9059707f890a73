//go:build unix

package capped

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
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
