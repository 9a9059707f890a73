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
	data, err := capped.ReadAs(file, MaxFileSize, errTooLarge, errNotRegular)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		err = capped.Bare(err) // the path is already in the Error
		return nil, &Error{File: file, Err: err}
	}
	return parse(file, data)
}
