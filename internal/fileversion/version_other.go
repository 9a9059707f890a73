//go:build !linux

package fileversion

import "io/fs"

func of(fi fs.FileInfo) Version { return weak(fi) }
