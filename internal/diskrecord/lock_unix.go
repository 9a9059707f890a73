//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package diskrecord

import (
	"errors"
	"os"
	"syscall"
)

// flock takes an exclusive flock on f, waiting for it. Closing f releases
// it, and so does the process dying.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
