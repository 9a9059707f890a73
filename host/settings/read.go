package settings

import (
	"errors"
	"io"
	"io/fs"
	"os"
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

// readCapped reads a regular file of at most MaxFileSize bytes. It looks
// before it opens, so that a FIFO or a device cannot block it, and it
// opens without blocking and looks again, in case the file was swapped
// in between. It never reads more than MaxFileSize+1 bytes, in case the
// file grows after the look.
func readCapped(file string) ([]byte, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if err := check(fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(file, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(fi); err != nil {
		return nil, err
	}
	return readLimited(f)
}

// check refuses what is not a regular file of at most MaxFileSize bytes.
func check(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errNotRegular
	}
	if fi.Size() > MaxFileSize {
		return errTooLarge
	}
	return nil
}

// readLimited reads r to its end, or refuses it once it passes
// MaxFileSize bytes.
func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, errTooLarge
	}
	return data, nil
}
