package settings

import (
	"errors"
	"io/fs"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
)

// MaxFileSize is the largest settings file read, in bytes (1 MiB). A
// settings file is a page of hand-typed JSON; a larger one is a mistake or
// a trap, and is refused without being read.
const MaxFileSize = 1 << 20

var (
	errTooLarge   = errors.New("larger than the 1 MiB limit for a settings file")
	errNotRegular = errors.New("not a regular file, so it is not read")
)

// read returns one file's layer, or nil and no error when the file does
// not exist. Every error is an *Error naming the file.
func read(file string) (*layer, error) {
	data, err := readCapped(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the Error
		}
		return nil, &Error{File: file, Err: err}
	}
	return parse(file, data)
}

// readCapped reads a regular file of at most MaxFileSize bytes, in the
// settings' own words when it refuses one. Package capped holds what a
// settings file needs: it looks before it opens, so that a FIFO or a
// device is never opened, looks again after, in case the file was swapped
// in between, refuses a file over the cap unread, and reads at most one
// byte past it, in case the file grows after the look.
func readCapped(file string) ([]byte, error) {
	data, err := capped.Read(file, MaxFileSize)
	var nr capped.NotRegularError
	switch {
	case errors.Is(err, capped.ErrTooLarge):
		return nil, errTooLarge
	case errors.As(err, &nr):
		return nil, errNotRegular
	}
	return data, err
}
