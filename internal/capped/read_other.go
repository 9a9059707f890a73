//go:build !unix

package capped

import (
	"fmt"
	"os"
)

// read looks before it opens, and again after, as the unix one does,
// through *os.File.
func read(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, NotRegularError{Mode: fi.Mode()}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() { // swapped in since the look
		return nil, NotRegularError{Mode: fi.Mode()}
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes: %w", path, fi.Size(), ErrTooLarge)
	}
	return fill(path, fi.Size(), max, f.Read)
}
