//go:build !linux

package shepherd

import (
	"errors"
	"os"
	osexec "os/exec"
)

// Available reports whether plugins can be started under a shepherd:
// never on this system, which has no child subreaper.
func Available() bool { return false }

var errUnavailable = errors.New("shepherd: not available on this system")

// Wrap fails: see Available.
func Wrap(*osexec.Cmd) (lifeline, child *os.File, err error) { return nil, nil, errUnavailable }

// Started fails: see Available.
func Started(*os.File, string) error { return errUnavailable }
