// Package capped reads small files whole: only regular ones, only up to
// a cap, and in as few system calls as the system allows. bingo reads a
// manifest and a declaration-cache file for every plugin installed on
// every run, and os.Open's own work on a file it may poll (setting it
// non-blocking, offering it to the poller, setting it back) was five of the
// eleven system calls each read took.
package capped

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrTooLarge is wrapped by the error for a file over the cap.
var ErrTooLarge = errors.New("over the cap")

// NotRegularError is the error for a file that is not a regular one.
type NotRegularError struct{ Mode fs.FileMode }

func (e NotRegularError) Error() string {
	return fmt.Sprintf("not a regular file (%s)", e.Mode.Type())
}

// Read returns the contents of the regular file at path, following
// symlinks, if it holds at most max bytes. It opens without blocking, so
// a FIFO returns at once (refused as NotRegularError, unread), and reads
// one byte past the cap to notice a file that grows while it is read.
// Errors from the system are *fs.PathError.
func Read(path string, max int64) ([]byte, error) {
	return read(path, max)
}
