//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package trust

import (
	"errors"
	"os"
	"syscall"
)

// openRead opens path for reading without ever waiting: O_NONBLOCK makes
// opening a FIFO return at once instead of waiting for a writer (the caller
// then sees, by Stat, that it is not a regular file and reads nothing).
// With follow false, a symlink in the last element is refused (ELOOP)
// rather than followed.
func openRead(path string, follow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}

// lock takes an exclusive flock on f, waiting for it. Closing f releases
// it, and so does the process dying.
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
