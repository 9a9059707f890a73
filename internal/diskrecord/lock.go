package diskrecord

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrLocked is TryLock's error when another holds the lock.
var ErrLocked = errors.New("held by another")

// Lock takes the lock of the record at path, waiting for it: an exclusive
// flock on path+".lock" (made 0600, its directory 0700, if missing), so
// that two bingo processes reading, changing and replacing the same
// record do not lose each other's change. unlock releases it; so does
// the process dying. Where there is no flock, the error wraps
// errors.ErrUnsupported.
func Lock(path string) (unlock func(), err error) { return lock(path, true) }

// TryLock takes the lock of the record at path as Lock does, but does
// not wait: ErrLocked if another holds it. A process holding a lock for
// as long as it lives is seen alive by TryLock's ErrLocked.
func TryLock(path string) (unlock func(), err error) { return lock(path, false) }

func lock(path string, wait bool) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	for {
		f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock(f, wait); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", f.Name(), err)
		}
		// Whoever held it before may have removed the lock file (a
		// pruner removing a past session's): a lock on a file no longer
		// at the path excludes no one, so take the one there now.
		held, err1 := f.Stat()
		there, err2 := os.Stat(f.Name())
		if err1 == nil && err2 == nil && os.SameFile(held, there) {
			return func() { f.Close() }, nil
		}
		f.Close()
	}
}
