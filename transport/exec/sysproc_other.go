//go:build !linux

package exec

import "syscall"

// sysProcAttr puts the child in its own process group. Other systems have
// no parent-death signal: the host's own stop sequence is all there is.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
