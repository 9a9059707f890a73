package exec

import "syscall"

// sysProcAttr puts the child in its own process group and, on Linux, has
// the kernel SIGKILL it when the host dies, however it dies: even SIGKILL
// of bingo leaves no plugin behind. (Pdeathsig follows the OS thread that
// started the child; the Go runtime keeps its threads for the life of the
// process unless a goroutine exits while locked to one, which the host
// never does around a Start.) It reaches the child itself; what the child
// started in its group is ended by the reaper once the child is gone.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
