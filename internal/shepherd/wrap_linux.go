package shepherd

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// This file is the host's side. Its imports are the shepherd's: see
// run_linux.go.

// self is the running binary, whatever has become of its file since.
const self = "/proc/self/exe"

// Available reports whether plugins can be started under a shepherd: on
// Linux, with /proc mounted.
var Available = sync.OnceValue(func() bool {
	_, err := os.Stat(self)
	return err == nil
})

// Wrap returns the command that starts c under a shepherd, which starts c.
// The caller starts it with child as its descriptor 3 (os/exec's
// ExtraFiles[0]), with the command's Sys, without a parent-death signal
// (which would end the shepherd before it could end the tree), and closes
// child once it has started; should the start fail, WithoutNamespaces
// says whether to start it again without them. lifeline is the host's
// end: Started reads the shepherd's report on it, and closing it ends the
// program and every process it left.
func Wrap(c Command) (shepherd Command, lifeline, child *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return Command{}, nil, nil, &os.SyscallError{Syscall: "socketpair", Err: err}
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	shepherd = Command{
		Path: self,
		Args: append([]string{"bingo-shepherd"}, c.Args...),
		Env:  append(env[:len(env):len(env)], envKey+"="+c.Path),
	}
	if c.Sandbox != nil {
		shepherd.Env = append(shepherd.Env, sandboxKey+"="+c.Sandbox.encode())
		shepherd.Sys = namespaces(c.Sandbox)
		shepherd.Env = append(shepherd.Env, idsKey+"="+string(itoa(os.Getuid(), ' '))+string(itoa(os.Getgid(), ' ')))
	}
	return shepherd, os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline"), nil
}

// Started reads the shepherd's report: nil once the program runs, or
// os/exec's error for a program that could not be executed. path is the
// program, for the error.
func Started(lifeline *os.File, path string) error {
	var line []byte
	// A byte at a time: what follows the report (Exited's) is not this
	// one's to read.
	buf := make([]byte, 1)
	for len(line) == 0 || line[len(line)-1] != '\n' {
		if len(line) > 32 {
			return errors.New("shepherd: unexpected report " + string(line))
		}
		n, err := lifeline.Read(buf)
		line = append(line, buf[:n]...)
		if n == 0 && err != nil {
			return errors.New("shepherd ended before starting " + path + " (" + err.Error() + ")")
		}
	}
	report := string(line[:len(line)-1])
	if report == "" {
		return nil
	}
	n, ok := atoi(report)
	if !ok {
		return errors.New("shepherd: unexpected report " + report)
	}
	return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
}

// Exited returns the program's wait status, once its shepherd has exited,
// where the shepherd's own is not the program's: a confined program's
// shepherd, its PID namespace's init, cannot die of the signal that ended
// the program, and exits 128+signal instead. ok is false where the
// shepherd's own status is the program's, or the lifeline is closed.
func Exited(lifeline *os.File) (status syscall.WaitStatus, ok bool) {
	var report []byte
	buf := make([]byte, 32)
	for len(report) < 32 {
		n, err := lifeline.Read(buf)
		report = append(report, buf[:n]...)
		if err != nil || n == 0 {
			break
		}
	}
	if len(report) < 3 || report[0] != 'X' || report[len(report)-1] != '\n' {
		return 0, false
	}
	n, ok := atoi(string(report[1 : len(report)-1]))
	return syscall.WaitStatus(n), ok
}

// Hand gives the shepherd the stop of its program, whose stdin the host
// has just closed: the stop sequence (Stop) with grace, which it runs to
// its end whatever becomes of the host, lifeline or not. files are the
// program's stderr, which the host no longer reads, and then its log, if
// there is one: the shepherd drains the one into the other (at most
// drainCap) until the tree is gone. It is how a host that is about to exit
// leaves without waiting for its plugins, and leaves none behind.
func Hand(lifeline *os.File, grace time.Duration, files ...*os.File) error {
	// Copies, made while each file's Control keeps it from being closed,
	// and sent: the files themselves stay the caller's.
	var fds []int
	defer func() {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}()
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		var derr error
		if err := rc.Control(func(fd uintptr) {
			syscall.ForkLock.RLock() // no plugin start may inherit it
			defer syscall.ForkLock.RUnlock()
			var nfd int
			if nfd, derr = syscall.Dup(int(fd)); derr == nil {
				syscall.CloseOnExec(nfd)
				fds = append(fds, nfd)
			}
		}); err != nil {
			return err
		}
		if derr != nil {
			return &os.SyscallError{Syscall: "dup", Err: derr}
		}
	}
	var rights []byte
	if len(fds) > 0 {
		rights = syscall.UnixRights(fds...)
	}
	rc, err := lifeline.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.Sendmsg(int(fd), append([]byte{'s'}, itoa(int(grace/time.Millisecond), '\n')...), rights, nil, 0)
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.SyscallError{Syscall: "sendmsg", Err: serr}
	}
	return nil
}
