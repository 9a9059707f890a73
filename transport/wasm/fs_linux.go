package wasm

import (
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// Utimens sets the times of the open file itself (fd_filestat_set_times):
// without it wazero falls back to the file's name, which may lead to
// another file by then (renamed away, something else in its place).
func (r *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	ts := [2]unix.Timespec{timespec(atim), timespec(mtim)}
	rc, err := r.f.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var e unix.Errno
	if err := rc.Control(func(fd uintptr) {
		// utimensat with a NULL path is futimens: the descriptor's file.
		_, _, e = unix.Syscall6(unix.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}); err != nil {
		return errno(err)
	}
	if e != 0 {
		return errno(e)
	}
	return 0
}

// timespec is a WASI time, "leave unchanged" included, as utimensat's.
func timespec(ns int64) unix.Timespec {
	if ns == experimentalsys.UTIME_OMIT {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(ns)
}
