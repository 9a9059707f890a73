//go:build !unix

package capped

import (
	"fmt"
	"io"
	"os"
)

func read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, NotRegularError{Mode: fi.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", path, max, ErrTooLarge)
	}
	return data, nil
}
