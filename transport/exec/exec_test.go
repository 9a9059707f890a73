package exec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/transport"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
)

// config runs this test binary as the plugin, behaving as modes says (see
// child). The short grace keeps the signal steps of the tests fast.
func config(t testing.TB, modes string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Command:   exe,
		Env:       append(os.Environ(), childEnv+"="+modes),
		StopGrace: 100 * time.Millisecond,
	}
}

// start starts cfg and makes sure the instance is gone when the test ends,
// so no reaper goroutine outlives it.
func start(t testing.TB, cfg Config) *conn {
	t.Helper()
	tc, err := New(cfg).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = tc.Kill()
		_ = tc.Wait()
	})
	return tc.(*conn)
}

func readLine(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a line: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

func readPid(t testing.TB, r *bufio.Reader) int {
	t.Helper()
	line := readLine(t, r)
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "pid "))
	if err != nil {
		t.Fatalf("want a pid line, got %q", line)
	}
	return pid
}

// gone reports whether pid no longer runs: no such process, or a zombie
// waiting for a parent (init) that is not ours.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// waitGone polls: a process that is not our child offers nothing to wait
// on.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !gone(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitWithin calls Wait, failing the test if it has not returned within d.
func waitWithin(t *testing.T, c transport.Conn, d time.Duration) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- c.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("Wait has not returned after %v", d)
		return nil
	}
}

func TestKind(t *testing.T) {
	if k := New(Config{Command: "x"}).Kind(); k != "exec" {
		t.Fatalf("Kind() = %q", k)
	}
}

func TestEchoRoundTripAndCloseClosesStdinOnly(t *testing.T) {
	c := start(t, config(t, "echo"))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, r); got != "hello" {
		t.Fatalf("echo = %q", got)
	}
	// Close is stdin only: what the child writes before it exits is still
	// readable, and then stdout ends.
	if _, err := io.WriteString(c, "last\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "last\n" {
		t.Fatalf("after Close read %q, %v", rest, err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if _, err := io.WriteString(c, "more\n"); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after Close = %v, want io.ErrClosedPipe", err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v", n, err)
	}
}

func TestLargeWriteRoundTrips(t *testing.T) {
	c := start(t, config(t, "echo"))
	want := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 32<<20/44+1)[:32<<20]
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		werr <- err
	}()
	got := make([]byte, len(want)+1)
	n, err := io.ReadFull(c, got)
	if err != io.ErrUnexpectedEOF { // the one spare byte proves the end
		t.Fatalf("reading the echo: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:n], want) {
		t.Fatalf("echoed %d bytes, not the %d written", n, len(want))
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestWaitReportsExitCodeToEveryWaiter(t *testing.T) {
	c := start(t, config(t, "exit3"))
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- c.Wait() }()
	}
	for range 4 {
		err := <-errs
		var ee *osexec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("Wait = %v, want exit status 3", err)
		}
		if !strings.Contains(err.Error(), "exit status 3") || errors.Is(err, ErrKilled) {
			t.Fatalf("Wait error %q", err)
		}
	}
}

func TestStartDirAndEnv(t *testing.T) {
	cfg := config(t, "pwd,exit")
	cfg.Dir = t.TempDir()
	cfg.Env = append(cfg.Env, "BINGO_EXEC_TEST_VALUE=from-entry-env")
	c := start(t, cfg)
	r := bufio.NewReader(c)
	wantDir, _ := filepath.EvalSymlinks(cfg.Dir)
	if got := readLine(t, r); got != wantDir {
		t.Errorf("cwd = %q, want %q", got, wantDir)
	}
	if got := readLine(t, r); got != "from-entry-env" {
		t.Errorf("env value = %q", got)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestEnvIsTheWholeEnvironment(t *testing.T) {
	t.Setenv("BINGO_EXEC_TEST_VALUE", "from-host")
	t.Setenv(childEnv, "pwd,exit") // seen by the child only through a nil Env
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{name: "nil inherits the host's", env: nil, want: "from-host"},
		{name: "given is all there is", env: []string{childEnv + "=pwd,exit"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t, "")
			cfg.Env = tc.env
			c := start(t, cfg)
			r := bufio.NewReader(c)
			readLine(t, r) // the working directory
			if got := readLine(t, r); got != tc.want {
				t.Errorf("BINGO_EXEC_TEST_VALUE in the child = %q, want %q", got, tc.want)
			}
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProgramLookup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "bingo-test-plugin")); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, cfg Config) {
		t.Helper()
		c := start(t, cfg)
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("bare name in the child's PATH", func(t *testing.T) {
		cfg := config(t, "exit")
		cfg.Command = "bingo-test-plugin"
		// The child's PATH, not the host's, is searched; the last entry
		// wins as it does in the child.
		cfg.Env = append(cfg.Env, "PATH=/nonexistent", "PATH=/nonexistent:"+bin)
		run(t, cfg)
	})
	t.Run("relative path against Dir", func(t *testing.T) {
		cfg := config(t, "exit")
		cfg.Command = "./bin/bingo-test-plugin"
		cfg.Dir = root
		run(t, cfg)
	})
}

func TestStartNotFound(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/bin/true", filepath.Join(dir, "here-only")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, command string
		env           []string
		dir           string
	}{
		{name: "bare name", command: "bingo-no-such-plugin-xyz"},
		{name: "absolute path", command: "/nonexistent/bingo-plugin"},
		// The host's PATH has sh, but the child's PATH wins.
		{name: "not in child's PATH", command: "sh", env: []string{"PATH=/nonexistent"}},
		// A relative PATH entry would run whatever sits in the session's
		// directory: it is not searched.
		{name: "relative PATH entry", command: "here-only", env: []string{"PATH=.:"}, dir: dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Command: tc.command, Env: tc.env, Dir: tc.dir}).Start(context.Background())
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Start = %v, want ErrNotFound", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(tc.command)) || !strings.Contains(msg, "not found") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming %q and saying not found", msg, tc.command)
			}
		})
	}
}

func TestStartCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(config(t, "exit")).Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start = %v, want context.Canceled", err)
	}
}

func TestStderrGoesToWriterAndIsDrainedBeforeWait(t *testing.T) {
	var log testutil.SyncBuffer
	cfg := config(t, "stderr,exit")
	cfg.Stderr = &log
	c := start(t, cfg)
	out, err := io.ReadAll(c)
	if err != nil || len(out) != 0 {
		t.Fatalf("stdout = %q, %v: stderr must not reach the wire", out, err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("x", 1<<20) + "\nplugin says hello\n"
	if got := log.String(); got != want {
		t.Fatalf("log has %d bytes (ends %q), want all %d", len(got), got[max(0, len(got)-20):], len(want))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStderrDrainedEvenIfWriterFails(t *testing.T) {
	// The child writes 1 MiB to stderr, far more than a pipe holds: if a
	// failing log stopped the draining, it would block and never exit.
	for name, w := range map[string]io.Writer{"nil": nil, "failing": failingWriter{}} {
		t.Run(name, func(t *testing.T) {
			cfg := config(t, "stderr,exit")
			cfg.Stderr = w
			c := start(t, cfg)
			if err := waitWithin(t, c, 20*time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWaitNotHeldByEscapedStderrHolder(t *testing.T) {
	var log testutil.SyncBuffer
	cfg := config(t, "escape,exit")
	cfg.Stderr = &log
	cfg.StopGrace = 200 * time.Millisecond
	c := start(t, cfg)
	pid := readPid(t, bufio.NewReader(c))
	defer syscall.Kill(pid, syscall.SIGKILL) // out of the group: ours to end
	if gone(pid) {
		t.Fatal("the escaped sleep is not running")
	}
	if err := waitWithin(t, c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestNaturalExitEndsTheGroup(t *testing.T) {
	var log testutil.SyncBuffer
	cfg := config(t, "grandchild-stderr")
	cfg.Stderr = &log
	// A long grace: Wait is prompt only because the straggler holding
	// stderr is killed, not because the drain gives up on it.
	cfg.StopGrace = time.Minute
	c := start(t, cfg)
	pid := readPid(t, bufio.NewReader(c))
	if gone(pid) {
		t.Fatal("grandchild not running")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(t, c, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

func TestKillEndsTheWholeTree(t *testing.T) {
	// The plugin ignores both stdin's EOF and SIGTERM: only the group's
	// SIGKILL ends it, and its grandchild (which sh left running) must end
	// too.
	c := start(t, config(t, "ignore-term,grandchild,ready,ignore-eof"))
	r := bufio.NewReader(c)
	pid := readPid(t, r)
	if got := readLine(t, r); got != "ready" {
		t.Fatalf("got %q", got)
	}
	if gone(pid) {
		t.Fatal("grandchild not running")
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee *osexec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !errors.Is(err, ErrKilled) {
		t.Fatalf("Wait = %v, want killed by SIGKILL", err)
	}
	if !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("Wait error %q does not name the signal", err)
	}
	waitGone(t, pid)
}

func TestKillSendsSIGTERMAfterGrace(t *testing.T) {
	cfg := config(t, "ready,ignore-eof")
	c := start(t, cfg)
	if got := readLine(t, bufio.NewReader(c)); got != "ready" {
		t.Fatalf("got %q", got)
	}
	began := time.Now()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < cfg.StopGrace {
		t.Fatalf("Kill took %v: SIGTERM before the stdin grace (%v) was over", d, cfg.StopGrace)
	}
	err := c.Wait()
	var ee *osexec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM || !errors.Is(err, ErrKilled) {
		t.Fatalf("Wait = %v, want killed by SIGTERM", err)
	}
	if !strings.Contains(err.Error(), "signal: terminated") {
		t.Fatalf("Wait error %q does not name the signal", err)
	}
}

func TestKillIsPromptForPluginThatExitsOnEOF(t *testing.T) {
	cfg := config(t, "echo")
	cfg.StopGrace = time.Minute
	c := start(t, cfg)
	began := time.Now()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Fatalf("Kill took %v for a plugin that exits on EOF", d)
	}
	// It exited cleanly on EOF: that is its exit reason, not a signal.
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

func TestKillUnblocksReadAndWrite(t *testing.T) {
	cfg := config(t, "ready,hang")
	cfg.StopGrace = time.Minute // Kill sits in its first step throughout
	c := start(t, cfg)
	r := bufio.NewReader(c)
	if got := readLine(t, r); got != "ready" {
		t.Fatalf("got %q", got)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := r.ReadByte() // the child never writes again
		readErr <- err
	}()
	writeErr := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, 4<<20)) // the child never reads: fills the pipe
		writeErr <- err
	}()
	killed := make(chan error, 1)
	go func() { killed <- c.Kill() }()

	for name, ch := range map[string]chan error{"Read": readErr, "Write": writeErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, ErrKilled) {
				t.Errorf("%s after Kill = %v, want ErrKilled", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still blocked after Kill", name)
		}
	}
	select {
	case <-killed:
		t.Fatal("Kill returned before the child was gone")
	default:
	}
	// End it ourselves rather than sit out the minute-long grace.
	if err := syscall.Kill(-c.pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(c.Wait(), ErrKilled) {
		t.Fatalf("Wait = %v, want ErrKilled", c.Wait())
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrKilled) {
		t.Fatalf("Read after Kill returned = %v", err)
	}
}

func TestKillIsIdempotentAndConcurrent(t *testing.T) {
	c := start(t, config(t, "ready,ignore-eof"))
	if got := readLine(t, bufio.NewReader(c)); got != "ready" {
		t.Fatalf("got %q", got)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() { errs <- c.Kill() })
		wg.Go(func() {
			if err := c.Wait(); !errors.Is(err, ErrKilled) {
				errs <- fmt.Errorf("Wait = %v", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Kill(); err != nil {
		t.Fatalf("Kill after Kill: %v", err)
	}
}

func TestAlwaysReaped(t *testing.T) {
	reaped := func(t *testing.T, pid int) {
		t.Helper()
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
			t.Fatalf("Wait4(%d) = %v: not reaped", pid, err)
		}
	}
	t.Run("after Kill and Wait", func(t *testing.T) {
		c := start(t, config(t, "ready,ignore-eof,ignore-term"))
		if got := readLine(t, bufio.NewReader(c)); got != "ready" {
			t.Fatalf("got %q", got)
		}
		_ = c.Kill()
		_ = c.Wait()
		reaped(t, c.pgid)
	})
	t.Run("without anyone calling Wait", func(t *testing.T) {
		c := start(t, config(t, "exit3"))
		// An unreaped child stays in /proc as a zombie: polling, since
		// waiting on it is exactly what the test must not do.
		proc := fmt.Sprintf("/proc/%d", c.pgid)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(proc); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still there: not reaped", proc)
			}
		}
		reaped(t, c.pgid)
	})
}

func BenchmarkStartEcho(b *testing.B) {
	tr := New(config(b, "echo"))
	for b.Loop() {
		echoOnce(b, tr)
	}
}

// echoOnce starts an instance of an echoing plugin, has it echo a line,
// and waits for its exit on the end of stdin.
func echoOnce(b *testing.B, tr *Transport) {
	line := []byte("ping\n")
	c, err := tr.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Write(line); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, len(line))); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
}

// Signal reaches every live instance's group at once, without the stop
// sequence's waits: how a host that must quit now ends a plugin that
// ignores both the end of its stdin and SIGTERM. Reaped instances are not
// signalled again.
func TestSignalEndsEveryLiveInstance(t *testing.T) {
	cfg := config(t, "ready,ignore-term,ignore-eof")
	cfg.StopGrace = time.Hour // Kill's own sequence would take hours
	tr := New(cfg)
	var conns []transport.Conn
	for range 2 {
		c, err := tr.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if got := readLine(t, bufio.NewReader(c)); got != "ready" {
			t.Fatalf("got %q", got)
		}
		c.Close() // the end of stdin: ignored
	}
	tr.Signal(syscall.SIGTERM) // ignored too
	tr.Signal(syscall.SIGKILL)
	for _, c := range conns {
		err := c.Wait()
		var ee *osexec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("Wait = %v, want killed by SIGKILL", err)
		}
	}
	tr.mu.Lock()
	live := len(tr.live)
	tr.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d reaped instances still counted live", live)
	}
}

// A read deadline in the past interrupts a blocked Read without losing
// the conn, and a cleared one lets the next Read through; once Kill has
// set its own, SetReadDeadline cannot lift it and Read stays unblocked.
func TestSetReadDeadlineNeverLiftsKill(t *testing.T) {
	c := start(t, config(t, "ready,echo"))
	r := bufio.NewReader(c)
	if got := readLine(t, r); got != "ready" {
		t.Fatalf("got %q", got)
	}
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, r); got != "again" {
		t.Fatalf("after the deadline was cleared: %q", got)
	}

	// A child that never reads nor exits: Kill sits in its first step.
	cfg := config(t, "ready,hang")
	cfg.StopGrace = time.Minute
	h := start(t, cfg)
	t.Cleanup(func() { _ = syscall.Kill(-h.pgid, syscall.SIGKILL) }) // a failure need not sit out the grace
	hr := bufio.NewReader(h)
	if got := readLine(t, hr); got != "ready" {
		t.Fatalf("got %q", got)
	}
	killed := make(chan error, 1)
	go func() { killed <- h.Kill() }()
	for !h.killed.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := h.SetReadDeadline(time.Time{}); !errors.Is(err, ErrKilled) {
		t.Fatalf("SetReadDeadline after Kill = %v, want ErrKilled", err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := hr.ReadByte()
		readErr <- err
	}()
	select {
	case err := <-readErr:
		if !errors.Is(err, ErrKilled) {
			t.Fatalf("Read after Kill = %v, want ErrKilled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked after Kill: its deadline was lifted")
	}
	if err := syscall.Kill(-h.pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-killed
}
