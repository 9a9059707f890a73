package shepherd

import (
	"errors"
	"os"
	"sync"
	"syscall"
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
// ExtraFiles[0]), without a parent-death signal (which would end the
// shepherd before it could end the tree), and closes child once it has
// started. lifeline is the host's end: Started reads the shepherd's report
// on it, and closing it ends the program and every process it left.
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
	return shepherd, os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline"), nil
}

// Started reads the shepherd's report: nil once the program runs, or
// os/exec's error for a program that could not be executed. path is the
// program, for the error.
func Started(lifeline *os.File, path string) error {
	var line []byte
	buf := make([]byte, 16)
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
