package diskrecord

import (
	"fmt"
	"os"
	"path/filepath"
)

// Lock takes the lock of the record at path, waiting for it: an exclusive
// flock on path+".lock" (made 0600, its directory 0700, if missing), so
// that two bingo processes reading, changing and replacing the same
// record do not lose each other's change. unlock releases it; so does
// the process dying. Where there is no flock, the error wraps
// errors.ErrUnsupported.
func Lock(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}
