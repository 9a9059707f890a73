//go:build !linux

package wasm

// hostFSOf names the host's file system fd lies on: only Linux mounts
// windows onto the host (proc, sysfs) where a working directory may hold
// them; elsewhere devices are refused as devices.
func hostFSOf(int) string { return "" }

// hostFSAt is hostFSOf for a path.
func hostFSAt(string) string { return "" }
