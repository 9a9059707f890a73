package testutil

import (
	"runtime"
	"syscall"
)

// WithBindMount runs f on one locked thread in a mount namespace of its
// own, in which dir is also reached at alias (a bind mount): another name
// for the same directory, as a case-insensitive disk or a firmlink gives
// one. The thread is never unlocked, so it ends with its namespace and
// nothing else sees the bind. Without the right to make the namespace
// (not root, a container), f does not run and the reason is returned,
// for the test to skip with.
func WithBindMount(dir, alias string, f func()) (skip string) {
	return withMount(dir, alias, "", syscall.MS_BIND, f)
}

// WithProcMount is WithBindMount with a proc file system of its own
// mounted at dir (as a chroot or a container's root has one).
func WithProcMount(dir string, f func()) (skip string) {
	return withMount("proc", dir, "proc", 0, f)
}

func withMount(source, target, fstype string, flags uintptr, f func()) (skip string) {
	ch := make(chan string, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
			ch <- "unshare: " + err.Error()
			return
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			ch <- "private mounts: " + err.Error()
			return
		}
		if err := syscall.Mount(source, target, fstype, flags, ""); err != nil {
			ch <- "mount " + source + ": " + err.Error()
			return
		}
		f()
		ch <- ""
	}()
	return <-ch
}
