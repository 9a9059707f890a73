//go:build !wasip1

package main

import "io/fs"

// isRegular reports whether info is a regular file. (See regular_wasip1.go
// for why WASI needs its own.)
func isRegular(info fs.FileInfo) bool { return info.Mode().IsRegular() }

// outsideSandbox is false: a native process has no sandbox to be outside.
func outsideSandbox(error) bool { return false }
