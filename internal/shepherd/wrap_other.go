//go:build !linux

package shepherd

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Available reports whether plugins can be started under a shepherd:
// never on this system, which has no child subreaper.
func Available() bool { return false }

var errUnavailable = errors.New("shepherd: not available on this system")

// Wrap fails: see Available.
func Wrap(Command) (shepherd Command, lifeline, child *os.File, err error) {
	return Command{}, nil, nil, errUnavailable
}

// Started fails: see Available.
func Started(*os.File, string) error { return errUnavailable }

// WithoutNamespaces returns err: see Available.
func WithoutNamespaces(c Command, err error) (Command, error) { return c, err }

// Exited reports nothing: see Available.
func Exited(*os.File) (status syscall.WaitStatus, ok bool) { return status, false }

// Hand fails: see Available.
func Hand(*os.File, time.Duration, ...*os.File) error { return errUnavailable }

// Isolation says how a program confined to s would be isolated: not at
// all on this system.
func Isolation(*Sandbox) (level, less string) {
	return "none", "this system has no Landlock or network namespaces"
}
