// Package capped reads small files whole: only regular ones, only up to
// a cap, and in as few system calls as the system allows. bingo reads a
// manifest and a declaration-cache file for every plugin installed on
// every run, and os.Open's own work on a file it may poll (setting it
// non-blocking, offering it to the poller, setting it back) was five of the
// eleven system calls each read took. Settings files are read here too:
// a path a cloned repository names is never opened unless it is a regular
// file, and never costs more than its cap.
package capped

import (
	"errors"
	"fmt"
	"io"
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
// symlinks, if it holds at most max bytes. It looks before it opens, so
// what is not a regular file (a FIFO, a device) is refused as
// NotRegularError without being opened; it opens without blocking and
// looks again, in case the file was swapped in between; a file over the
// cap is refused before any of it is read; and it reads at most one byte
// past the cap, to notice a file that grew since the look. Errors from
// the system are *fs.PathError.
func Read(path string, max int64) ([]byte, error) {
	return read(path, max)
}

// ReadAs is Read with its refusals in the caller's words: tooLarge for a
// file over the cap, notRegular for one that is not a regular file (nil
// keeps Read's own). The system's errors are Read's.
func ReadAs(path string, max int64, tooLarge, notRegular error) ([]byte, error) {
	data, err := read(path, max)
	var nr NotRegularError
	switch {
	case errors.Is(err, ErrTooLarge):
		return nil, tooLarge
	case notRegular != nil && errors.As(err, &nr):
		return nil, notRegular
	}
	return data, err
}

// Bare drops the path from an *fs.PathError, for a message that names the
// file already.
func Bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fill reads to the end through read, into room for size bytes (what the
// file held when looked at) and one more, so that a file grown since shows
// it. It asks for at most max+1 bytes in all: a file that keeps growing
// costs no more than that. read is a Read of the file; a read of no bytes
// and no error, as the system call gives it, is the end too.
func fill(path string, size, max int64, read func([]byte) (int, error)) ([]byte, error) {
	buf := make([]byte, 0, min(size, max)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(buf[len(buf):min(int64(cap(buf)), max+1)])
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) > max:
			return nil, fmt.Errorf("%s: more than %d bytes: %w", path, max, ErrTooLarge)
		case err == io.EOF || n == 0 && err == nil:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}
