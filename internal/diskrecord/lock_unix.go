//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package diskrecord

import (
	"errors"
	"os"
	"syscall"
)

// flock takes an exclusive flock on f, waiting for it if wait, or else
// ErrLocked if another holds it. Closing f releases it, and so does the
// process dying.
func flock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		}
		return err
	}
}
