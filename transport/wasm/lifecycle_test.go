package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/transport"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
)

func TestKind(t *testing.T) {
	var tr transport.Transport = sharedHost.Transport(Config{Path: probeWasm, Name: "probe"})
	if got := tr.Kind(); got != "wasm" {
		t.Fatalf("Kind() = %q, want wasm", got)
	}
}

func TestStdioRoundTrip(t *testing.T) {
	var log testutil.SyncBuffer
	p := startProbe(t, sharedHost, Config{Args: []string{"-v", "x y"}, Stderr: &log})
	for _, s := range []string{"hello", "second line", `{"jsonrpc":"2.0","id":1,"method":"m"}`} {
		if got := p.ask("echo " + s); got != s {
			t.Fatalf("echo %q answered %q", s, got)
		}
	}
	if got, want := p.ask("args"), `"probe" "-v" "x y"`; got != want {
		t.Fatalf("argv = %s, want %s (argv[0] is the plugin's name)", got, want)
	}
	if got := p.ask("stderr a log line"); got != "ok" {
		t.Fatalf("stderr answered %q", got)
	}
	if !strings.Contains(log.String(), "a log line\n") {
		t.Fatalf("Config.Stderr got %q, want the guest's stderr", log.String())
	}
}

func TestCloseEndsWithExitZero(t *testing.T) {
	p := startProbe(t, sharedHost, Config{})
	p.ask("echo up")
	if err := p.conn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(t, p.conn, 10*time.Second); err != nil {
		t.Fatalf("Wait after Close = %v, want nil (the guest read EOF and returned)", err)
	}
	if n, err := p.out.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after exit = %d, %v; want 0, EOF", n, err)
	}
	if _, err := p.conn.Write([]byte("echo late\n")); err == nil {
		t.Fatal("Write after exit succeeded")
	}
	// Wait may be called again, from anywhere.
	if err := p.conn.Wait(); err != nil {
		t.Fatalf("second Wait = %v", err)
	}
}

func TestDeaths(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		code     uint32
		contains string
	}{
		{"exit", "exit 3", 3, "exit code 3"},
		{"panic", "panic boom", 2, "panic: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProbe(t, sharedHost, Config{Name: "dier"})
			if _, err := io.WriteString(p.conn, tt.cmd+"\n"); err != nil {
				t.Fatal(err)
			}
			err := waitWithin(t, p.conn, 10*time.Second)
			if err == nil {
				t.Fatal("Wait = nil, want a death")
			}
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tt.code {
				t.Fatalf("Wait = %v, want an exit code %d", err, tt.code)
			}
			if msg := err.Error(); !strings.Contains(msg, "wasm plugin dier") || !strings.Contains(msg, tt.contains) {
				t.Fatalf("Wait = %q, want the plugin's name and %q", msg, tt.contains)
			}
		})
	}
}

// trapWasm is a hand-written WASI command whose _start executes
// `unreachable`: the smallest real trap. (A Go guest never traps: its
// runtime turns faults into panics and exit code 2.)
var trapWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
	0x03, 0x02, 0x01, 0x00, // funcs: 0 of type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: min 1 page
	0x07, 0x13, 0x02, // exports: 2
	0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // _start = func 0
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, // memory = memory 0
	0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // code: unreachable; end
}

func TestTrapIsADeath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trap.wasm")
	if err := os.WriteFile(path, trapWasm, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := sharedHost.Transport(Config{Path: path, Name: "trapper"}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = waitWithin(t, c, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "wasm plugin trapper: trap") || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Wait = %v, want a trap naming the plugin and unreachable", err)
	}
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("not wasm at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{garbage, filepath.Join(dir, "missing.wasm")} {
		_, err := sharedHost.Transport(Config{Path: path, Name: "bad"}).Start(context.Background())
		if want := "wasm plugin bad: compile " + path + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Start = %v, want an error starting %q", err, want)
		}
	}
}

func TestMemoryLimitBelowMinimum(t *testing.T) {
	_, err := sharedHost.Transport(Config{Path: probeWasm, Name: "tiny", MemoryLimitMiB: 1}).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "wasm plugin tiny: memory limit of 1 MiB is below the module's minimum") {
		t.Fatalf("Start = %v, want a plain memory-minimum error", err)
	}
}

// cpuTime is this process's user+system CPU time.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A Go guest that reads on one goroutine and answers on another (as
// pluginkit does) must not deadlock: a read waiting for input has to leave
// the guest's only thread to its other goroutines.
func TestGuestGoroutinesRunWhileStdinWaits(t *testing.T) {
	p := startProbe(t, sharedHost, Config{})
	if _, err := fmt.Fprintln(p.conn, "later from another goroutine"); err != nil {
		t.Fatal(err)
	}
	if got := p.line(); got != "from another goroutine" {
		t.Fatalf("got %q", got)
	}
}

func TestIdleGuestDoesNotSpin(t *testing.T) {
	p := startProbe(t, sharedHost, Config{})
	p.ask("echo ready") // now waiting for stdin in poll_oneoff
	const idle = 300 * time.Millisecond
	before := cpuTime(t)
	<-time.After(idle) // the measurement window, not synchronisation
	used := cpuTime(t) - before
	t.Logf("CPU used by the process over %v of guest idleness: %v", idle, used)
	if used > idle/3 {
		t.Fatalf("process used %v CPU in %v while the guest waited for stdin: it is spinning", used, idle)
	}
	if got := p.ask("echo still here"); got != "still here" {
		t.Fatalf("after idling the guest answered %q (did it see EOF?)", got)
	}
}

func TestKill(t *testing.T) {
	t.Run("spinning guest", func(t *testing.T) {
		p := startProbe(t, sharedHost, Config{})
		if got := p.ask("spin"); got != "spinning" {
			t.Fatalf("spin answered %q", got)
		}
		checkKill(t, p)
	})
	t.Run("guest blocked reading stdin", func(t *testing.T) {
		p := startProbe(t, sharedHost, Config{})
		p.ask("echo parked")
		checkKill(t, p)
	})
	t.Run("guest blocked writing stdout", func(t *testing.T) {
		p := startProbe(t, sharedHost, Config{})
		// Two commands; only the first answer is read, so the guest blocks
		// writing the second.
		if _, err := io.WriteString(p.conn, "echo a\necho b\n"); err != nil {
			t.Fatal(err)
		}
		if got := p.line(); got != "a" {
			t.Fatalf("got %q", got)
		}
		checkKill(t, p)
	})
}

func checkKill(t *testing.T, p *probe) {
	t.Helper()
	start := time.Now()
	if err := p.conn.Kill(); err != nil {
		t.Fatal(err)
	}
	err := waitWithin(t, p.conn, 5*time.Second)
	t.Logf("Wait returned %v after Kill", time.Since(start))
	if !errors.Is(err, ErrKilled) {
		t.Fatalf("Wait = %v, want ErrKilled", err)
	}
	if err := p.conn.Kill(); err != nil { // idempotent
		t.Fatalf("second Kill = %v", err)
	}
	// What the guest wrote before it was killed is read (a pipe's buffer
	// at most), and then Read fails.
	buf, total := make([]byte, 4096), 0
	for {
		n, err := p.conn.Read(buf)
		total += n
		if err != nil {
			break
		}
		if total > pipeBuffer {
			t.Fatal("Read after Kill goes on past what the pipe holds")
		}
	}
	if _, err := p.conn.Write([]byte("echo x\n")); err == nil {
		t.Fatal("Write after Kill succeeded")
	}
}

func TestManyInstancesOfOneModule(t *testing.T) {
	// A fresh Host over the warm cache: the concurrent first Starts must
	// share one compilation.
	ctx := context.Background()
	h, err := NewHost(ctx, HostConfig{CacheDir: warmCache})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)

	const n = 4
	probes := make([]*probe, n)
	var wg sync.WaitGroup
	for i := range n {
		// Two transports of one path: compilation is per Host and file.
		cfg := Config{Name: "many" + string(rune('a'+i%2))}
		wg.Go(func() { probes[i] = startProbe(t, h, cfg) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, p := range probes {
		want := strings.Repeat("x", i+1)
		if got := p.ask("echo " + want); got != want {
			t.Fatalf("instance %d answered %q", i, got)
		}
	}
	if got := h.compiles.Load(); got != 1 {
		t.Fatalf("%d compilations for %d concurrent starts of one module, want 1", got, n)
	}
}

func TestHostCloseKillsInstances(t *testing.T) {
	ctx := context.Background()
	h, err := NewHost(ctx, HostConfig{CacheDir: warmCache})
	if err != nil {
		t.Fatal(err)
	}
	parked := startProbe(t, h, Config{})
	parked.ask("echo parked")
	spinner := startProbe(t, h, Config{})
	spinner.ask("spin")

	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*probe{parked, spinner} {
		if err := waitWithin(t, p.conn, 5*time.Second); !errors.Is(err, ErrKilled) {
			t.Fatalf("Wait after Host.Close = %v, want ErrKilled", err)
		}
	}
	if _, err := h.Transport(Config{Path: probeWasm, Name: "late"}).Start(ctx); !errors.Is(err, ErrHostClosed) {
		t.Fatalf("Start after Close = %v, want ErrHostClosed", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestDiskCache(t *testing.T) {
	var files int
	_ = filepath.WalkDir(warmCache, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatalf("the cache dir %s is empty after a compile", warmCache)
	}

	ctx := context.Background()
	start := time.Now()
	h, err := NewHost(ctx, HostConfig{CacheDir: warmCache})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if err := firstAnswer(h); err != nil {
		t.Fatal(err)
	}
	warm := time.Since(start)
	t.Logf("first answer: cold %v (compile, in TestMain), warm %v (a new Host on the same cache dir, %d files)", coldStart, warm, files)
	if warm >= coldStart/3 {
		t.Fatalf("a second Host with the same cache took %v to first answer, cold took %v: the cache was not used", warm, coldStart)
	}
}
