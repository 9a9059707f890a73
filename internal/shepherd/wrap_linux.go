package shepherd

import (
	"bufio"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// self is the running binary, whatever has become of its file since.
const self = "/proc/self/exe"

// Available reports whether plugins can be started under a shepherd: on
// Linux, with /proc mounted.
var Available = sync.OnceValue(func() bool {
	_, err := os.Stat(self)
	return err == nil
})

// Wrap rewrites cmd, ready to start the program at cmd.Path with argv
// cmd.Args, so that it starts a shepherd which starts that program. It
// returns the host's end of the lifeline and the shepherd's, which the
// caller closes once cmd has started. After cmd.Start, Started says
// whether the program itself started; closing the lifeline then ends the
// program and every process it left. cmd.SysProcAttr must not be shared:
// the shepherd's own parent-death signal is cleared, as it would kill the
// shepherd before it could end the tree.
func Wrap(cmd *osexec.Cmd) (lifeline, child *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("shepherd: %w", err)
	}
	lifeline, child = os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline")
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], envKey+"="+cmd.Path)
	cmd.Args = append([]string{"bingo-shepherd"}, cmd.Args...)
	cmd.Path = self
	cmd.ExtraFiles = []*os.File{child} // descriptor 3: lifelineFd
	if cmd.SysProcAttr != nil {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	return lifeline, child, nil
}

// Started reads the shepherd's report: nil once the program runs, or
// os/exec's error for a program that could not be executed. path is the
// program, for the error.
func Started(lifeline *os.File, path string) error {
	line, err := bufio.NewReaderSize(lifeline, 64).ReadString('\n')
	if err != nil {
		return fmt.Errorf("shepherd ended before starting %s (%w)", path, err)
	}
	line = strings.TrimSuffix(line, "\n")
	if line == "" {
		return nil
	}
	n, err := strconv.Atoi(line)
	if err != nil {
		return fmt.Errorf("shepherd: unexpected report %q", line)
	}
	return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
}
