package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
)

// conn is one running child process. The reaper goroutine (reap) owns the
// process and the stderr pipe; Kill and the I/O methods only signal and
// close.
type conn struct {
	name  string // the program as configured, for messages
	cmd   *osexec.Cmd
	pgid  int // == the child's pid: it leads its own group
	grace time.Duration

	// lifeline is the host's end of the shepherd's lifeline; nil for a
	// child started without one. The child is then the shepherd.
	lifeline     *os.File
	lifelineOnce sync.Once

	stdin     *os.File // our end: Write
	stdinOnce sync.Once
	stdinErr  error

	stdout     *os.File // our end: Read
	stdoutOnce sync.Once
	eof        atomic.Bool // stdout reached its end and is closed

	stderr     *os.File      // our end, copied to log by drainStderr; nil: /dev/null
	stderrDone chan struct{} // closed once drainStderr has returned
	log        io.Writer     // Config.Stderr

	leaving *atomic.Bool  // the Transport's: Kill hands the stop to the shepherd
	handed  chan struct{} // closed once the shepherd has the stop (handOff)

	killed   atomic.Bool
	deadline sync.Mutex // orders SetReadDeadline with kill's: a killed Read stays unblocked
	killOnce sync.Once
	killErr  error

	reaped func()        // called once the child is reaped: its Transport stops counting it live
	exited chan struct{} // closed once the child is reaped
	done   chan struct{} // closed once everything is released; err is set
	err    error
}

// Read reads the child's stdout. It returns io.EOF once every writer of the
// pipe has gone (the child and anything it left holding stdout), and
// ErrKilled once Kill has been called, even if unread output remains.
func (c *conn) Read(p []byte) (int, error) {
	if c.eof.Load() {
		return 0, io.EOF
	}
	n, err := c.stdout.Read(p)
	switch {
	case err == nil:
	case c.killed.Load():
		err = ErrKilled
	case err == io.EOF:
		// Release the pipe as soon as its end is seen, rather than at
		// Wait: output still in the pipe when the child exits belongs to
		// the reader, so Wait must not close it.
		c.eof.Store(true)
		c.closeStdout()
	case errors.Is(err, os.ErrClosed) && c.eof.Load():
		err = io.EOF // another reader saw the end and closed the pipe
	}
	return n, err
}

// SetReadDeadline sets the deadline of Read, as os.File's does: a Read
// blocked past it returns an error matching os.ErrDeadlineExceeded, and
// the zero time clears it. Once Kill has been called it changes nothing
// and returns ErrKilled: Kill's deadline, which keeps Read unblocked,
// stays.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.deadline.Lock()
	defer c.deadline.Unlock()
	if c.killed.Load() {
		return ErrKilled
	}
	return c.stdout.SetReadDeadline(t)
}

// Write writes to the child's stdin.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.stdin.Write(p)
	if err != nil {
		switch {
		case c.killed.Load():
			err = ErrKilled
		case errors.Is(err, os.ErrClosed):
			err = io.ErrClosedPipe
		}
	}
	return n, err
}

// Close closes the child's stdin, and only that: a well-behaved plugin
// reads EOF and exits, and its last output can still be read. Idempotent.
func (c *conn) Close() error {
	c.stdinOnce.Do(func() { c.stdinErr = c.stdin.Close() })
	return c.stdinErr
}

func (c *conn) closeStdout() {
	c.stdoutOnce.Do(func() { _ = c.stdout.Close() })
}

// Wait returns once the child has been reaped, its process group has been
// ended and its stderr drained: nil for exit status 0, otherwise an error
// naming the exit status or the signal (an *os/exec.ExitError is in the
// chain). After a Kill that handed the stop to the shepherd (see
// Transport.Leave), it returns nil at once. Any number of goroutines may
// wait.
func (c *conn) Wait() error {
	select {
	case <-c.done:
		return c.err
	case <-c.handed:
		return nil
	}
}

// Kill stops the child in three steps, each only if the last did not end
// it (shepherd.Stop): close stdin and wait StopGrace; SIGTERM the process
// group and wait StopGrace; SIGKILL the process group (under a shepherd:
// the whole tree, see signal). Once the Transport is leaving, a shepherded
// child's Kill closes stdin, hands the rest to its shepherd and returns
// at once. A plugin that exits on stdin EOF is gone at once; at worst
// Kill blocks for 2×StopGrace (plus up to one more StopGrace if something
// outside the group holds stderr, or if the plugin keeps its shepherd
// stopped, which is then killed with its group). Read and
// Write are unblocked at its first step. Idempotent: concurrent and later
// calls return once the first has finished.
func (c *conn) Kill() error {
	c.killOnce.Do(func() { c.killErr = c.kill() })
	return c.killErr
}

func (c *conn) kill() error {
	// A deadline in the past wakes a blocked Read now without closing the
	// pipe: the child, still shutting down, may write a little more, and
	// a closed pipe would kill it with SIGPIPE instead of letting it exit.
	c.deadline.Lock()
	c.killed.Store(true)
	_ = c.stdout.SetReadDeadline(time.Unix(1, 0))
	c.deadline.Unlock()
	_ = c.Close() // EOF on the child's stdin; a blocked Write returns

	if c.lifeline != nil && c.leaving.Load() && c.handOff() == nil {
		close(c.handed)
		return nil
	}
	// After SIGKILL, which cannot be ignored, the wait on done below is
	// unbounded.
	var err error
	shepherd.Stop(c.grace, c.waitExited, func(sig syscall.Signal) {
		if e := c.signal(sig); e != nil && err == nil {
			err = e
		}
	})
	for c.lifeline != nil && !c.waitExited(c.grace) {
		// A shepherd still ending the tree (a big one, a busy machine) is
		// left to it; one the plugin keeps stopped (which it can: it runs
		// as the person) never would end it, and is killed with its group,
		// so that Kill still returns.
		if c.shepherdStopped() {
			if e := c.signalGroup(syscall.SIGKILL); e != nil && err == nil {
				err = e
			}
			break
		}
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
	}
	<-c.done
	c.closeStdout()
	return err
}

// handOff gives the rest of the stop to the shepherd (shepherd.Hand),
// with the child's stderr, which the shepherd drains into the log from
// then on: the host stops copying it first, so that no line is copied
// twice or out of order. A log with a File method (host.LogFile) is the
// file written to; any other is left behind, and the shepherd drops what
// the child writes.
func (c *conn) handOff() error {
	var files []*os.File
	if c.stderr != nil {
		_ = c.stderr.SetReadDeadline(time.Unix(1, 0))
		<-c.stderrDone
		files = append(files, c.stderr)
		if l, ok := c.log.(interface{ File() *os.File }); ok {
			if f := l.File(); f != nil {
				files = append(files, f)
			}
		}
	}
	err := shepherd.Hand(c.lifeline, c.grace, files...)
	// A shepherd the plugin stopped would never act on it.
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	return err
}

// waitExited reports whether the child is reaped within d.
func (c *conn) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// signal sends sig to the instance. SIGKILL to a shepherded instance is
// the end of its lifeline instead, on which the shepherd SIGKILLs the
// plugin and every process it left, wherever they went, before it exits:
// a SIGKILL would end the shepherd first and leave to init what had
// escaped the group. Any other signal goes to the group, where the
// shepherd ignores it: it is the plugin's to act on.
func (c *conn) signal(sig syscall.Signal) error {
	if sig == syscall.SIGKILL && c.lifeline != nil {
		c.cutLifeline()
		// A shepherd the plugin stopped would never act on it.
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		return nil
	}
	return c.signalGroup(sig)
}

// signalGroup sends sig to every process in the child's group. A group
// that is already empty is not an error. Should the group refuse the
// signal, the child itself still gets it (through its pidfd, which cannot
// reach a reused pid), so Kill never waits on a child it failed to signal.
func (c *conn) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-c.pgid, sig)
	if err == nil {
		return nil
	}
	if perr := c.cmd.Process.Signal(sig); perr == nil || errors.Is(perr, os.ErrProcessDone) {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
	}
	return fmt.Errorf("exec %q: %s process group %d: %w", c.name, sig, c.pgid, err)
}

// reap is the one goroutine that owns the process: it always waits for
// it, so no instance is ever left a zombie, whether or not anyone calls
// Wait or Kill.
func (c *conn) reap() {
	err := c.cmd.Wait()
	if c.lifeline != nil && err != nil {
		if ws, ok := shepherd.Exited(c.lifeline); ok && ws.Signaled() {
			err = &signalError{ws}
		}
	}
	c.reaped()
	close(c.exited)

	// The instance is the whole group. With its leader gone, whatever it
	// left behind is an orphan no one will stop: end it now, so it can
	// hold neither the pipes nor the files the next instance needs. The
	// group id cannot be reused while any member lives, so this signal
	// reaches only what the plugin started. (A shepherd has ended its
	// tree before exiting; the group is empty unless it was killed.)
	_ = c.signalGroup(syscall.SIGKILL)
	c.closeLifeline()

	if c.stderr != nil {
		// Something outside the group (a setsid'd daemon) may still hold
		// the stderr pipe: drain what comes within the grace, then stop
		// listening, so Wait is never held hostage by it.
		_ = c.stderr.SetReadDeadline(time.Now().Add(c.grace))
		<-c.stderrDone
		_ = c.stderr.Close()
	}
	_ = c.Close() // nothing reads it any more

	if err != nil {
		if c.killed.Load() && signaled(err) {
			err = fmt.Errorf("exec %q: %w: %w", c.name, ErrKilled, err)
		} else {
			err = fmt.Errorf("exec %q: %w", c.name, err)
		}
	}
	c.err = err
	close(c.done)
}

// signaled reports whether err, Wait's, says a signal ended the instance.
func signaled(err error) bool {
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		ws, ok := ee.Sys().(syscall.WaitStatus)
		return ok && ws.Signaled()
	}
	var se *signalError
	return errors.As(err, &se)
}

// signalError is the end of a confined program by a signal, which its
// shepherd, the init of the program's PID namespace, cannot die of, and
// reports instead (shepherd.Exited). It reads as an *os/exec.ExitError
// does; Sys is the program's wait status.
type signalError struct{ status syscall.WaitStatus }

func (e *signalError) Error() string {
	text := "signal: " + e.status.Signal().String()
	if e.status.CoreDump() {
		text += " (core dumped)"
	}
	return text
}

// Sys returns the program's syscall.WaitStatus.
func (e *signalError) Sys() any { return e.status }
