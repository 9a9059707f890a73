//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package diskrecord

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// flock refuses where there is no flock.
func flock(*os.File, bool) error {
	return fmt.Errorf("locking files is not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
