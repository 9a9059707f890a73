//go:build unix

package capped

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// read opens the file with a bare system call: the *os.File machinery is
// not needed for one read of a regular file. It looks before it opens, as
// settings files are read, so that what is not a regular file is never
// opened at all: a path a cloned repository names may be a symlink to a
// device whose open does something (a FIFO's writer waiting for a reader,
// a watchdog armed), and the check after the open only catches a swap.
func read(path string, max int64) ([]byte, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, notRegular(path)
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG { // swapped in since the look
		return nil, notRegular(path)
	}
	if st.Size > max {
		return nil, fmt.Errorf("%s: %d bytes: %w", path, st.Size, ErrTooLarge)
	}
	return fill(path, st.Size, max, func(b []byte) (int, error) {
		for {
			n, err := syscall.Read(fd, b)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				return 0, &fs.PathError{Op: "read", Path: path, Err: err}
			}
			return n, nil
		}
	})
}

// notRegular is the error for a path that is not a regular file, with its
// mode as os.Stat gives it.
func notRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return NotRegularError{Mode: fi.Mode()}
}
