//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package trust

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// openRead opens path for reading. Where this file is built there are no
// FIFOs to block on; follow is advisory (the caller compares what it opened
// with what it Lstat-ed).
func openRead(path string, follow bool) (*os.File, error) {
	return os.Open(path)
}

// lock refuses: without flock two bingo processes could lose each other's
// records, and a lost "no" is better refused than guessed at.
func lock(*os.File) error {
	return fmt.Errorf("locking the trust record is not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
