package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/lookpath"
	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// DefaultStopGrace is the StopGrace used when Config.StopGrace is zero.
const DefaultStopGrace = 2 * time.Second

// Config says how to run a plugin's program. The zero value of every field
// except Command is a sensible default.
type Config struct {
	// Command is the program to run. A name without a path separator is
	// looked up in the PATH of Env, or in the host's PATH when Env sets
	// none; a relative path with a separator is taken relative to Dir.
	Command string
	// Args are the program's arguments, without the program itself.
	Args []string
	// Env is the child's whole environment, as "KEY=value" entries: the
	// caller has already merged the host's environment with the
	// manifest's entry.env. Nil means the host's environment unchanged.
	Env []string
	// Dir is the child's working directory (the session's cwd); empty
	// means the host's.
	Dir string
	// Stderr receives everything the child writes to its stderr: the
	// plugin's log. Nil discards it. It must never be the terminal. It is
	// written from one goroutine per running instance, and never after
	// that instance's Wait has returned. If it has a method File()
	// *os.File, the file it appends to, a shepherd handed the stop by
	// Leave writes the rest of the child's stderr there itself.
	Stderr io.Writer
	// StopGrace is how long Kill waits after closing stdin before it sends
	// SIGTERM to the process group, and after SIGTERM before SIGKILL. It
	// also bounds how long an ended instance waits for its stderr to drain.
	// Zero means DefaultStopGrace.
	StopGrace time.Duration
	// Sandbox, if not nil, confines every instance where there is a
	// shepherd (Linux): to it, and to what the program runs from (its
	// installation, its script's interpreter, the files its args name).
	// Nil runs it with the person's authority.
	Sandbox *shepherd.Sandbox
}

// Transport starts instances of one plugin program as child processes. It
// is safe for concurrent use.
type Transport struct {
	cfg Config

	// shepherded: each instance runs under a shepherd (internal/shepherd),
	// which ends what its program leaves behind, detached or not.
	shepherded bool

	leaving atomic.Bool // Leave was called

	mu   sync.Mutex
	live map[*conn]struct{} // instances not yet reaped, for Signal
}

// New returns a transport that runs the program cfg describes. The
// program is looked up at each Start, so a plugin installed or fixed after
// New is found on the next respawn.
func New(cfg Config) *Transport {
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	// Copies, so a caller reusing its slices cannot change a running
	// plugin's respawns. Clone keeps an empty Env empty (not nil: nil
	// would mean the host's environment).
	cfg.Args = slices.Clone(cfg.Args)
	cfg.Env = slices.Clone(cfg.Env)
	return &Transport{cfg: cfg, shepherded: shepherd.Available(), live: make(map[*conn]struct{})}
}

// Signal sends sig to the process group of every instance of this
// transport that has not been reaped yet; SIGKILL ends a shepherded
// instance's whole tree instead (see conn.signal). It is how a host that
// must quit now shortens the stop sequence: Kill waits StopGrace between
// its steps, and a person who asked to quit does not.
func (t *Transport) Signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.live {
		_ = c.signal(sig)
	}
}

// Leave is for a host about to exit: from now on, Kill on an instance
// under a shepherd closes its stdin, hands the rest of the stop sequence
// to the shepherd (with its stderr, to drain into the log), and returns
// at once, and so does Wait. The shepherd ends the plugin within the
// sequence's bounds, the host's exit or not. An instance without a
// shepherd is stopped as before.
func (t *Transport) Leave() { t.leaving.Store(true) }

var _ transport.Transport = (*Transport)(nil)

// A caller may read its own answer (transport.ReadDeadliner).
var _ transport.ReadDeadliner = (*conn)(nil)

// Kind implements transport.Transport.
func (*Transport) Kind() string { return "exec" }

// ErrNotFound is why Start fails for a program that does not exist. Its
// text is written to read on in the error: `exec: program "x" not found in
// PATH`.
var ErrNotFound = lookpath.ErrNotFound

// ErrKilled is what Read and Write return once Kill has been called, and
// what Wait's error wraps when the instance died of a signal Kill sent.
var ErrKilled = transport.ErrKilled

// Start implements transport.Transport. ctx bounds the start only: once
// the process runs, it lives until it exits or is killed.
func (t *Transport) Start(ctx context.Context) (transport.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec: start %q: %w", t.cfg.Command, err)
	}
	path, err := t.resolve()
	if err != nil {
		return nil, err
	}

	// Three OS pipes, with the child's ends handed to it as *os.File so
	// os/exec starts no copying goroutines of its own: the caller reads
	// stdout and writes stdin directly, and Wait never waits on a copy
	// that a lingering grandchild keeps alive.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: start %q: %w", t.cfg.Command, err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, fmt.Errorf("exec: start %q: %w", t.cfg.Command, err)
	}
	var stderrR, stderrW *os.File
	if t.cfg.Stderr != nil {
		if stderrR, stderrW, err = os.Pipe(); err != nil {
			closeAll(stdinR, stdinW, stdoutR, stdoutW)
			return nil, fmt.Errorf("exec: start %q: %w", t.cfg.Command, err)
		}
	}

	cmd := &osexec.Cmd{
		Path:   path,
		Args:   append([]string{t.cfg.Command}, t.cfg.Args...),
		Env:    t.cfg.Env,
		Dir:    t.cfg.Dir,
		Stdin:  stdinR,
		Stdout: stdoutW,
		// Its own process group, so Kill can signal the whole tree the
		// plugin starts, and a ^C at the terminal (sent to the host's
		// foreground group) does not reach plugins behind the host's back.
		SysProcAttr: sysProcAttr(),
	}
	if stderrW != nil {
		cmd.Stderr = stderrW
	} // else nil: os/exec connects the child's stderr to /dev/null.

	cmd, lifeline, err := t.startCmd(cmd, t.confinement(path))
	// The child holds its own copies now; ours would keep the pipes open
	// and hide the child's end (EOF) from us.
	closeAll(stdinR, stdoutW)
	if stderrW != nil {
		closeAll(stderrW)
	}
	if err != nil {
		closeAll(stdinW, stdoutR)
		if stderrR != nil {
			closeAll(stderrR)
		}
		return nil, fmt.Errorf("exec: start %q: %w", t.cfg.Command, err)
	}

	c := &conn{
		name:       t.cfg.Command,
		cmd:        cmd,
		pgid:       cmd.Process.Pid,
		grace:      t.cfg.StopGrace,
		lifeline:   lifeline,
		stdin:      stdinW,
		stdout:     stdoutR,
		stderr:     stderrR,
		stderrDone: make(chan struct{}),
		log:        t.cfg.Stderr,
		leaving:    &t.leaving,
		handed:     make(chan struct{}),
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
	}
	if stderrR != nil {
		go drainStderr(stderrR, t.cfg.Stderr, c.stderrDone)
	} else {
		close(c.stderrDone)
	}
	c.reaped = func() {
		t.mu.Lock()
		delete(t.live, c)
		t.mu.Unlock()
	}
	t.mu.Lock()
	t.live[c] = struct{}{}
	t.mu.Unlock()
	go c.reap()
	return c, nil
}

// resolve finds the file Start executes, by the rule trust pins it by
// (package lookpath), so that a missing program fails with one clear line
// instead of os/exec's generic text, and so that a bare name is searched
// in the child's PATH rather than only the host's.
func (t *Transport) resolve() (string, error) {
	path, err := lookpath.Find(t.cfg.Command, t.cfg.Dir, t.cfg.Env)
	if err != nil {
		return "", fmt.Errorf("exec: %w", err)
	}
	return path, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// drainStderr copies the child's stderr to w until the pipe ends (or the
// reaper's read deadline passes). A writer that fails is dropped, but the
// pipe is still drained: a child must never block on a full stderr pipe
// because the host's log is unhappy.
func drainStderr(r *os.File, w io.Writer, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10) // bounded: a flood of stderr costs no memory
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}
