// Package diskrecord writes the files bingo keeps on disk whole, and reads
// back the ones sealed with a checksum.
//
// Rules:
//   - A file is replaced, never written in place: the data goes to a
//     temporary file in the same directory (mode 0600 unless
//     Options.Mode says otherwise), which is renamed
//     over the old one, so that a reader, in this process or another,
//     sees the old file or the new one and never part of one. With
//     Options.Sync the new file survives a crash once Replace returns.
//   - A sealed record ends with the CRC-32C of what precedes it, four
//     bytes little-endian. A record that does not match its checksum (a
//     full disk, a crash, an edit) is ErrDamaged: a cache takes it for a
//     miss.
//   - A read is capped and never opens what is not a regular file
//     (package capped).
//
// Each caller keeps its own format and its own version, in the file or
// in the name of its directory.
package diskrecord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
)

// Options say how Replace writes.
type Options struct {
	// Temp is the pattern of the temporary file's name, as os.CreateTemp
	// takes it; "" is "tmp-*".
	Temp string
	// Mode is the new file's mode; 0 is 0600, for a file bingo alone
	// reads (one that may hold a secret).
	Mode os.FileMode
	// Sync syncs the temporary file before the rename and the directory
	// after it.
	Sync bool
	// BeforeRename, if set, is called with the temporary file's name once
	// it is written (and synced); an error stops Replace there, leaving
	// the file behind as a crash would. For tests.
	BeforeRename func(tmp string) error
}

// Replace replaces the file at path with data (see the package doc),
// creating its directory (mode 0700) if it is missing.
func Replace(path string, data []byte, o Options) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	pattern := o.Temp
	if pattern == "" {
		pattern = "tmp-*"
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	mode := o.Mode
	if mode == 0 {
		mode = 0o600
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && o.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if o.BeforeRename != nil {
		if err := o.BeforeRename(tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if o.Sync {
		d, err := os.Open(dir)
		if err == nil {
			err = d.Sync()
			d.Close()
		}
		if err != nil {
			return fmt.Errorf("%s is written but may not survive a crash: syncing %s: %w", path, dir, err)
		}
	}
	return nil
}

// ErrDamaged is the error for a sealed record that does not match its
// checksum.
var ErrDamaged = errors.New("does not match its checksum")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Seal returns data with its checksum appended: a sealed record.
func Seal(data []byte) []byte {
	return binary.LittleEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// ReadSealed returns what the sealed record at path holds, if it holds at
// most max bytes: capped.Read's error, or one wrapping ErrDamaged.
func ReadSealed(path string, max int64) ([]byte, error) {
	rec, err := capped.Read(path, max+4)
	if err != nil {
		return nil, err
	}
	if len(rec) < 4 {
		return nil, fmt.Errorf("%s: %w", path, ErrDamaged)
	}
	data, sum := rec[:len(rec)-4], rec[len(rec)-4:]
	if binary.LittleEndian.Uint32(sum) != crc32.Checksum(data, castagnoli) {
		return nil, fmt.Errorf("%s: %w", path, ErrDamaged)
	}
	return data, nil
}
