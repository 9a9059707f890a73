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
// not needed for one read of a regular file.
func read(path string, max int64) ([]byte, error) {
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
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		return nil, NotRegularError{Mode: fi.Mode()}
	}
	if st.Size > max {
		return nil, fmt.Errorf("%s: %d bytes: %w", path, st.Size, ErrTooLarge)
	}
	// One byte past what fstat saw, so that a file grown since shows it.
	buf := make([]byte, 0, st.Size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%s: more than %d bytes: %w", path, max, ErrTooLarge)
		}
	}
}
