package exec

import (
	"bytes"
	"os"
	osexec "os/exec"
	"strconv"
	"syscall"

	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
)

// startCmd starts cmd, under a shepherd where there is one (see
// internal/shepherd), and returns the command it started (cmd, or its
// second try where the first's namespaces were refused) and the
// instance's lifeline: nil for a child started directly. The shepherd has
// reported whether the program itself started by the time startCmd
// returns, so a program that cannot be executed fails Start either way.
// sandbox, if not nil, confines the program (shepherd.Sandbox).
func (t *Transport) startCmd(cmd *osexec.Cmd, sandbox *shepherd.Sandbox) (*osexec.Cmd, *os.File, error) {
	if !t.shepherded {
		return cmd, nil, cmd.Start()
	}
	path := cmd.Path
	s, lifeline, child, err := shepherd.Wrap(shepherd.Command{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Sandbox: sandbox})
	if err != nil {
		return cmd, nil, err
	}
	start := func(cmd *osexec.Cmd, s shepherd.Command) error {
		cmd.Path, cmd.Args, cmd.Env = s.Path, s.Args, s.Env
		cmd.ExtraFiles = []*os.File{child}
		// Its own group, as every instance, but no parent-death signal:
		// that would end the shepherd before it could end the tree. The
		// shepherd learns of the host's death from the lifeline instead.
		attr := syscall.SysProcAttr{}
		if s.Sys != nil {
			attr = *s.Sys
		}
		attr.Setpgid = true
		cmd.SysProcAttr = &attr
		return cmd.Start()
	}
	if err = start(cmd, s); err != nil && s.Sys != nil {
		if s, err = shepherd.WithoutNamespaces(s, err); err == nil {
			// A command is started once: its copy, unstarted.
			cmd = &osexec.Cmd{Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr}
			err = start(cmd, s)
		}
	}
	_ = child.Close() // the shepherd's copy is its own
	if err != nil {
		_ = lifeline.Close()
		return cmd, nil, err
	}
	if err := shepherd.Started(lifeline, path); err != nil {
		_ = lifeline.Close()
		_ = cmd.Wait() // the shepherd exits at once after its report
		return cmd, nil, err
	}
	return cmd, lifeline, nil
}

// cutLifeline orders the shepherd to end the instance's whole tree now,
// as the kernel does when the host dies. Idempotent. It ends only the
// host's writing: the shepherd of a confined instance reports the
// program's status on the lifeline once the tree is gone (Exited), which
// reap reads before it closes the lifeline (closeLifeline).
func (c *conn) cutLifeline() {
	if c.lifeline == nil {
		return
	}
	c.lifelineOnce.Do(func() {
		rc, err := c.lifeline.SyscallConn()
		if err != nil {
			return // closed already: the shepherd has seen its end
		}
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_WR) })
	})
}

// closeLifeline ends the lifeline, once reap has read what the shepherd
// reported on it.
func (c *conn) closeLifeline() {
	if c.lifeline != nil {
		c.cutLifeline()
		_ = c.lifeline.Close()
	}
}

// shepherdStopped reports whether the shepherd is stopped (or traced), or
// cannot be looked at, from /proc.
func (c *conn) shepherdStopped() bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/stat")
	if err != nil {
		return true
	}
	// "pid (comm) state ...": the state follows the name's last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'T' || stat[i+2] == 't'
}
