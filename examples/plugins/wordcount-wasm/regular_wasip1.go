//go:build wasip1

package main

import (
	"errors"
	"io/fs"
	"syscall"
)

// isRegular reports whether info is a regular file. Under WASI preview1 a
// FIFO or a socket reaches the guest as FILETYPE_UNKNOWN, which Go's os
// package reports as a regular file; opening one would block the host's
// thread for good. So ask WASI's own file type.
func isRegular(info fs.FileInfo) bool {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Filetype == syscall.FILETYPE_REGULAR_FILE
	}
	return info.Mode().IsRegular()
}

// outsideSandbox reports whether err says the path is under no directory
// the host mounted: Go's wasip1 runtime then calls WASI with no directory
// at all, and the host answers EBADF. Inside the sandbox such a file does
// not exist, and the answer says so, as it would for any missing file.
func outsideSandbox(err error) bool { return errors.Is(err, syscall.EBADF) }
