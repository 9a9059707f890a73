package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
)

// needShepherd skips where there is none (not Linux, no /proc).
func needShepherd(t testing.TB) {
	t.Helper()
	if !shepherd.Available() {
		t.Skip("no shepherd on " + runtime.GOOS)
	}
}

// startDetached starts a plugin that leaves three sleeps behind, each
// detached in its own way (see child's "detach"), and returns their pids
// once all three run.
func startDetached(t *testing.T, tr *Transport) (*conn, []int) {
	t.Helper()
	tc, err := tr.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := tc.(*conn)
	t.Cleanup(func() { _ = c.Kill(); _ = c.Wait() })
	r := bufio.NewReader(c)
	var pids []int
	for range 3 {
		pid := readPid(t, r)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		pids = append(pids, pid)
	}
	if got := readLine(t, r); got != "ready" {
		t.Fatalf("got %q", got)
	}
	for _, pid := range pids {
		if gone(pid) {
			t.Fatalf("detached sleep %d is not running", pid)
		}
	}
	return c, pids
}

// Whatever ends an instance ends every process it started, however it
// left the plugin: a new session, a group of its own, a double fork.
func TestInstanceEndEndsDetachedDescendants(t *testing.T) {
	needShepherd(t)
	for _, tc := range []struct {
		name  string
		modes string
		end   func(*Transport, *conn)
	}{
		// The plugin exits by itself: a crash, or the end of its stdin.
		{"natural exit", "detach,ready", func(_ *Transport, c *conn) { _ = c.Close() }},
		{"kill", "detach,ready,ignore-term,ignore-eof", func(_ *Transport, c *conn) { _ = c.Kill() }},
		// What host.Quit sends, and what the host's death amounts to: the
		// end of the lifeline.
		{"signal sigkill", "detach,ready,ignore-term,ignore-eof", func(tr *Transport, _ *conn) { tr.Signal(syscall.SIGKILL) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(config(t, tc.modes))
			c, pids := startDetached(t, tr)
			tc.end(tr, c)
			_ = waitWithin(t, c, 20*time.Second)
			for _, pid := range pids {
				if !gone(pid) {
					t.Errorf("detached sleep %d outlived its instance", pid)
				}
			}
		})
	}
}

// Without a shepherd (other systems) the instance is its process group:
// what stays in it ends with it, what left it is out of reach.
func TestUnshepherdedInstanceIsItsGroup(t *testing.T) {
	tr := New(config(t, "detach,ready"))
	tr.shepherded = false
	c, pids := startDetached(t, tr)
	if c.lifeline != nil {
		t.Fatal("started under a shepherd")
	}
	_ = c.Close()
	if err := waitWithin(t, c, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids[2]) // the double fork's sleep stayed in the group
	if gone(pids[0]) || gone(pids[1]) {
		t.Fatal("a sleep outside the group ended: is this run shepherded after all?")
	}
}

// Wait sees what the plugin's own wait status would have been, even for a
// signal the Go runtime of the shepherd would otherwise handle itself, and
// for a confined plugin's, whose shepherd, its PID namespace's init,
// cannot die of one.
func TestShepherdPassesOnTheExit(t *testing.T) {
	needShepherd(t)
	for _, tc := range []struct {
		script string
		check  func(syscall.WaitStatus) bool
	}{
		{"exit 3", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
		{"kill -USR1 $$", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGUSR1 }},
		{"kill -TERM $$", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGTERM }},
	} {
		for _, sandbox := range []*shepherd.Sandbox{nil, {Read: shepherd.SystemRead, Write: shepherd.SystemWrite}} {
			t.Run(fmt.Sprintf("%s/confined=%v", tc.script, sandbox != nil), func(t *testing.T) {
				c := start(t, Config{Command: "sh", Args: []string{"-c", tc.script}, Sandbox: sandbox})
				if c.lifeline == nil {
					t.Fatal("not started under a shepherd")
				}
				var ee interface{ Sys() any }
				err := c.Wait()
				if !errors.As(err, &ee) || !tc.check(ee.Sys().(syscall.WaitStatus)) {
					t.Fatalf("Wait = %v", err)
				}
				if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() && !strings.Contains(err.Error(), "signal: "+ws.Signal().String()) {
					t.Errorf("Wait = %v, which does not name the signal", err)
				}
			})
		}
	}
}

// A program that cannot be executed fails Start, as it does without a
// shepherd, with the same error; and no shepherd is left behind.
func TestShepherdReportsAnExecFailure(t *testing.T) {
	needShepherd(t)
	path := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shepherded := range []bool{true, false} {
		tr := New(Config{Command: path})
		tr.shepherded = shepherded
		_, err := tr.Start(context.Background())
		var pe *fs.PathError
		if !errors.Is(err, fs.ErrPermission) || !errors.As(err, &pe) || pe.Path != path {
			t.Fatalf("shepherded %v: Start = %v, want a permission error naming %s", shepherded, err, path)
		}
	}
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Fatalf("an unreaped child is left: Wait4 = %d, %v", pid, err)
	}
}

// The shepherd holds neither end of the wire: the plugin's output reaches
// the reader, and its end is the end of stdout, even while the shepherd
// is still ending the tree.
func TestShepherdIsNotOnTheWire(t *testing.T) {
	needShepherd(t)
	c := start(t, config(t, "echo"))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if got := readLine(t, r); got != "ping" {
		t.Fatalf("got %q", got)
	}
	for _, fd := range []string{"0", "1"} {
		if target, err := os.Readlink("/proc/" + strconv.Itoa(c.pgid) + "/fd/" + fd); err == nil {
			t.Fatalf("the shepherd holds fd %s (%s)", fd, target)
		}
	}
	_ = c.Close()
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("Read after the plugin's exit = %v, want EOF", err)
	}
}

// The shepherd's cost: the life of one instance (start, one line echoed,
// exit on the end of stdin), started directly and under a shepherd,
// alternately in the same run, for a plugin that starts as fast as a
// program can (cat) and one that starts like a Go plugin (this test
// binary). The shepherd here is the test binary, as it is bingo for bingo.
func BenchmarkShepherdStart(b *testing.B) {
	needShepherd(b)
	for _, p := range []struct {
		name string
		cfg  Config
	}{
		{"cat", Config{Command: "cat"}},
		{"go", config(b, "echo")},
	} {
		b.Run(p.name, func(b *testing.B) {
			direct, shepherded := New(p.cfg), New(p.cfg)
			direct.shepherded = false
			var took [2]time.Duration
			n := 0
			for b.Loop() {
				for i, tr := range []*Transport{direct, shepherded} {
					began := time.Now()
					echoOnce(b, tr)
					took[i] += time.Since(began)
				}
				n++
			}
			b.ReportMetric(float64(took[0].Microseconds())/float64(n), "direct-µs")
			b.ReportMetric(float64(took[1].Microseconds())/float64(n), "shepherd-µs")
			b.ReportMetric(float64(took[1])/float64(took[0]), "shepherd/direct")
		})
	}
}

// A plugin can stop its own shepherd (it runs as the same person): the
// end of the lifeline comes with a SIGCONT, and should the plugin keep
// stopping it, Kill still returns, the shepherd killed with its group.
func TestAStoppedShepherdStillEnds(t *testing.T) {
	needShepherd(t)
	for _, tc := range []struct {
		modes string
		end   func(*Transport, *conn)
	}{
		{"stop-parent", func(tr *Transport, _ *conn) { tr.Signal(syscall.SIGKILL) }},
		{"stop-parent-always", func(_ *Transport, c *conn) { _ = c.Kill() }},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			tr := New(config(t, tc.modes+",ready,ignore-term,ignore-eof"))
			tc2, err := tr.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c := tc2.(*conn)
			t.Cleanup(func() { _ = syscall.Kill(-c.pgid, syscall.SIGKILL); _ = c.Wait() })
			if got := readLine(t, bufio.NewReader(c)); got != "ready" {
				t.Fatalf("got %q", got)
			}
			ended := make(chan struct{})
			go func() { tc.end(tr, c); _ = c.Wait(); close(ended) }()
			select {
			case <-ended:
			case <-time.After(20 * time.Second):
				t.Fatal("the instance did not end")
			}
			var ee *osexec.ExitError
			if err := c.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("Wait = %v, want killed by SIGKILL", err)
			}
		})
	}
}

// fileLog is a log with a file, as host.LogFile: what a shepherd handed
// the stop writes the plugin's stderr to.
type fileLog struct{ f *os.File }

func (l fileLog) Write(p []byte) (int, error) { return l.f.Write(p) }
func (l fileLog) File() *os.File              { return l.f }

// Once the transport is leaving, Kill hands the stop to the shepherd and
// returns at once, and so does Wait; the shepherd carries the stop
// sequence out: a plugin that takes its time to stop is given it, and
// writes its log to the end, and one that ignores its stdin and SIGTERM
// is killed with everything it left, at the sequence's end.
func TestLeaveHandsTheStopToTheShepherd(t *testing.T) {
	needShepherd(t)
	for _, tc := range []struct {
		modes string
		grace time.Duration
	}{
		{"linger", 10 * time.Second},
		{"detach,ready,ignore-term,ignore-eof", time.Second},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			log, err := os.Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			cfg := config(t, tc.modes)
			cfg.StopGrace, cfg.Stderr = tc.grace, fileLog{log}
			tr := New(cfg)
			var c *conn
			var pids []int
			if tc.modes == "linger" {
				started, err := tr.Start(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				c = started.(*conn)
			} else {
				c, pids = startDetached(t, tr)
			}
			tr.Leave()
			began := time.Now()
			if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := waitWithin(t, c, time.Second); err != nil {
				t.Fatalf("Wait = %v", err)
			}
			if took := time.Since(began); took > 500*time.Millisecond {
				t.Fatalf("Kill and Wait took %v, want at once (the plugin takes 1s to stop, or the grace is %v)", took, tc.grace)
			}
			select {
			case <-c.done: // the shepherd is reaped: the tree is gone
			case <-time.After(20 * time.Second):
				t.Fatal("the shepherd never ended")
			}
			for _, pid := range pids {
				if !gone(pid) {
					t.Errorf("detached sleep %d outlived the stop", pid)
				}
			}
			var ee *osexec.ExitError
			if err := c.err; tc.modes == "linger" && err != nil || tc.modes != "linger" && !errors.As(err, &ee) {
				t.Fatalf("the instance ended with %v", err)
			}
			if b, _ := os.ReadFile(log.Name()); tc.modes == "linger" && string(b) != "stopping\nstopped\n" {
				t.Fatalf("log = %q, want the plugin's last words", b)
			}
		})
	}
}

// Kill of a confined plugin is ErrKilled, as an unconfined one's is: the
// host reads its shepherd's report of the SIGKILL before the lifeline is
// closed.
func TestKillConfinedIsErrKilled(t *testing.T) {
	needShepherd(t)
	if shepherd.LandlockABI() < 1 {
		t.Skip("no Landlock here")
	}
	cfg := config(t, "ignore-term,ready,ignore-eof")
	cfg.Sandbox = &shepherd.Sandbox{Read: append(slices.Clone(shepherd.SystemRead), filepath.Dir(cfg.Command)), Write: shepherd.SystemWrite}
	c := start(t, cfg)
	if got := readLine(t, bufio.NewReader(c)); got != "ready" {
		t.Fatalf("got %q", got)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee interface{ Sys() any }
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !errors.Is(err, ErrKilled) {
		t.Fatalf("Wait = %v, want killed by SIGKILL", err)
	}
}
