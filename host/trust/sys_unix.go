//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package trust

import (
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
