package conformance

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/exec"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Issue 9's option (b), measured: a wasm plugin run by a small wazero host
// in a child process (this test binary re-executed, wasmProcChild) whose
// guest reads the child's stdin and writes its stdout directly, so the
// host reaches it over the exec transport like any subprocess. There a
// loop-kill is a process kill, so the termination checks can be off; the
// benchmarks compare the child with the checks off and on against today's
// in-process transport/wasm and against the raw pipe.
//
// The child is a measuring rig, not the sandbox: it mounts the session
// directory read-only through wazero's own mount (no os.Root), caps no
// memory and passes the guest only the manifest's env.
const (
	wasmProcEnv       = "BINGO_WASMPROC_CHILD" // "checks" or "nochecks"
	wasmProcCacheEnv  = "BINGO_WASMPROC_CACHE"
	wasmProcModuleEnv = "BINGO_WASMPROC_MODULE"
	// wasmProcRSS starts the line the child writes to its stderr as it
	// exits: its peak RSS in KiB.
	wasmProcRSS = "wasmproc-peak-rss-kib "
)

// wasmProcChild is the whole life of a child: compile the module through
// the disk cache (warm: a load), run it with this process's stdio as its
// own until it exits, report the peak RSS, and exit with its code.
func wasmProcChild(mode string) int {
	code, err := runWasmProc(mode == "checks", os.Getenv(wasmProcCacheEnv), os.Getenv(wasmProcModuleEnv))
	// VmHWM, not getrusage's ru_maxrss: Linux carries the parent's peak
	// over the exec into ru_maxrss (Go starts children with CLONE_VM).
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				fmt.Fprintf(os.Stderr, "%s%s\n", wasmProcRSS, strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmproc:", err)
		return 1
	}
	return code
}

func runWasmProc(checks bool, cacheDir, module string) (int, error) {
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return 0, err
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(checks))
	defer rt.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return 0, err
	}
	bin, err := os.ReadFile(module)
	if err != nil {
		return 0, err
	}
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return 0, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithArgs(testplugin.Name).
		WithEnv(envKey, envValue).
		WithStdin(os.Stdin). // *os.File: the guest polls it, as in transport/wasm
		WithStdout(os.Stdout).
		WithStderr(os.Stderr).
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(cwd, cwd)).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader)
	_, err = rt.InstantiateModule(ctx, cm, mc) // runs _start to the guest's exit
	if exit, ok := err.(*sys.ExitError); ok {
		return int(exit.ExitCode()), nil
	}
	return 0, err
}

// wasmProcTransport re-executes this test binary as a wasm host child in
// the given mode ("checks" or "nochecks"), in the session directory,
// with its stderr to w.
func wasmProcTransport(b *testing.B, mode string, w io.Writer) transport.Transport {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return exec.New(exec.Config{
		Command: exe,
		Env: []string{wasmProcEnv + "=" + mode, wasmProcCacheEnv + "=" + wasmProcCache,
			wasmProcModuleEnv + "=" + testpluginWasm},
		Dir: sessionDir, Stderr: w, StopGrace: stopGrace,
	})
}

// wasmProcCache is the children's compilation cache, and that of the new
// in-process Hosts BenchmarkWasmProcessStart makes: apart from the
// wasmHost's, so that nothing loads an entry the wasmHost is writing
// (wazero issue #2547). Set in setup.
var wasmProcCache string

// inProcConfig runs the testplugin in this process, as the children run it.
func inProcConfig() wasm.Config {
	return wasm.Config{Path: testpluginWasm, Name: testplugin.Name, Dir: sessionDir, Env: map[string]string{envKey: envValue}}
}

// procPath is one way to make the echo call: through the bridge, or
// through the raw pipe's minimal driver.
type procPath struct {
	name string
	call func() error
}

// BenchmarkWasmProcessCall times a no-op (echo) tool call, interleaved
// call by call, on: the raw pipe to the floor (the baseline); the
// testplugin in-process over transport/wasm (checks on: today's path);
// and the testplugin in a wasm host child with the checks off and on —
// each through the bridge and through the raw pipe's minimal driver — and
// the native testplugin through the driver. Reported: the raw pipe's
// median and each path's median over it; then, each path alone, the CPU
// of a call (all processes, less the idle rate) and its children's share
// (the guest and its wazero, for a child path; not less the idle rate).
func BenchmarkWasmProcessCall(b *testing.B) {
	warming.Wait()
	warmWasmProc(b)
	params := protocol.ToolCallParams{CallID: "bench", Name: "echo", Input: []byte(`{"text":"hi"}`), Cwd: sessionDir}
	rawPath := func(name string, tr transport.Transport) procPath {
		c := startRaw(b, tr)
		b.Cleanup(c.close)
		return procPath{name, func() error {
			var res protocol.ToolCallResult
			if err := c.roundTrip(protocol.MethodToolCall, params, &res); err != nil || res.Output.Text() != "hi" {
				return fmt.Errorf("%s: %s, %v", name, jsonOf(res), err)
			}
			return nil
		}}
	}
	bridgePath := func(name string, tr transport.Transport) procPath {
		g := startGoPath(b, name, tr)
		return procPath{name, func() error {
			if !g.mustCall(b) {
				return errors.New(name + " failed")
			}
			return nil
		}}
	}
	inProc := func() transport.Transport { return wasmHost.Transport(inProcConfig()) }
	paths := []procPath{
		rawPath("raw", exec.New(exec.Config{Command: floorPlugin, Dir: sessionDir, Stderr: io.Discard, StopGrace: stopGrace})),
		bridgePath("bridge-wasm", inProc()),
		bridgePath("bridge-proc-nochecks", wasmProcTransport(b, "nochecks", io.Discard)),
		bridgePath("bridge-proc-checks", wasmProcTransport(b, "checks", io.Discard)),
		rawPath("driver-exec", exec.New(exec.Config{Command: nativeTestplugin, Dir: sessionDir, Stderr: io.Discard, StopGrace: stopGrace})),
		rawPath("driver-wasm", inProc()),
		rawPath("driver-proc-nochecks", wasmProcTransport(b, "nochecks", io.Discard)),
		rawPath("driver-proc-checks", wasmProcTransport(b, "checks", io.Discard)),
	}
	times := make([][]time.Duration, len(paths))
	turn := 0
	for b.Loop() {
		for k := range paths {
			i := (turn + k) % len(paths) // rotate: no path always follows another
			t0 := time.Now()
			if err := paths[i].call(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(t0))
		}
		turn++
	}
	mr := median(times[0])
	b.ReportMetric(float64(mr.Nanoseconds())/1e3, "raw-µs")
	for i, p := range paths[1:] {
		r := float64(median(times[i+1])) / float64(mr)
		b.ReportMetric(r, p.name+"/raw")
		b.Logf("%s call p50 ÷ raw pipe: %.2f× (%.0f µs)", p.name, r, float64(median(times[i+1]).Nanoseconds())/1e3)
	}
	// CPU per call, which a busy machine disturbs less than wall time: each
	// path alone for cpuCalls calls, this process's CPU and its children's
	// (all of them: only the path's own child is busy meanwhile). What the
	// idle instances burn is measured first and taken off in proportion to
	// each path's wall time.
	const cpuCalls = 1000
	s0, k0 := processCPU(b)
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	s1, k1 := processCPU(b)
	idle := float64(s1-s0+k1-k0) / float64(time.Since(t0))
	b.ReportMetric(idle*1e3, "idle-cpu-ms/s")
	for _, p := range paths {
		s0, k0 := processCPU(b)
		t0 := time.Now()
		for range cpuCalls {
			if err := p.call(); err != nil {
				b.Fatal(err)
			}
		}
		s1, k1 := processCPU(b)
		cpu := float64(s1-s0+k1-k0) - idle*float64(time.Since(t0))
		b.ReportMetric(cpu/cpuCalls/1e3, p.name+"-cpu-µs/call")
		b.ReportMetric(float64(k1-k0)/cpuCalls/1e3, p.name+"-child-cpu-µs/call")
	}
}

// processCPU is the CPU time (user + system) of this process and of
// every live child of it, from /proc (to 10 ms).
func processCPU(b *testing.B) (self, children time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // not a process, or gone
		}
		// After "(comm)": state ppid ... utime (14th field) stime (15th).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 || f[1] != pid {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		children += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return self, children
}

// BenchmarkWasmProcessStart times a start up to the first answer (the
// initialize handshake through the raw pipe's driver), interleaved: an
// in-process instance of the already compiled module (a respawn today),
// and a wasm host child with the checks off and on (process start, cache
// load, instantiate). Each child's peak RSS is reported as it exits.
func BenchmarkWasmProcessStart(b *testing.B) {
	warming.Wait()
	warmWasmProc(b)
	modes := []string{"inproc", "newhost", "nochecks", "checks"}
	times := map[string][]time.Duration{}
	rss := map[string][]time.Duration{} // KiB, kept as Durations to share median
	turn := 0
	for b.Loop() {
		for k := range modes {
			mode := modes[(turn+k)%len(modes)]
			var tr transport.Transport
			stderr := &testutil.SyncBuffer{}
			t0 := time.Now()
			var h *wasm.Host
			switch mode {
			case "inproc":
				tr = wasmHost.Transport(inProcConfig())
			case "newhost":
				var err error
				if h, err = wasm.NewHost(context.Background(), wasm.HostConfig{CacheDir: wasmProcCache}); err != nil {
					b.Fatal(err)
				}
				tr = h.Transport(inProcConfig())
			default:
				tr = wasmProcTransport(b, mode, stderr)
			}
			c := startRaw(b, tr)
			times[mode] = append(times[mode], time.Since(t0))
			c.close()
			if h != nil {
				if err := h.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if mode == "nochecks" || mode == "checks" {
				kib, err := peakRSS(stderr.String())
				if err != nil {
					b.Fatalf("%s: %v", mode, err)
				}
				rss[mode] = append(rss[mode], time.Duration(kib))
			}
		}
		turn++
	}
	in := median(times["inproc"])
	b.ReportMetric(float64(in.Microseconds())/1e3, "inproc-ms")
	nh := median(times["newhost"])
	b.ReportMetric(float64(nh.Microseconds())/1e3, "newhost-ms")
	for _, mode := range modes[2:] {
		m := median(times[mode])
		b.ReportMetric(float64(m.Microseconds())/1e3, mode+"-ms")
		b.ReportMetric(float64(median(rss[mode]))/1024, mode+"-rss-MiB")
		b.Logf("wasm host child (%s) start to first answer: %.1f ms, %.1f× an in-process instantiate (%.1f ms), %.2f× a new in-process Host on the disk cache (%.1f ms); peak RSS %.1f MiB",
			mode, float64(m.Microseconds())/1e3, float64(m)/float64(in), float64(in.Microseconds())/1e3,
			float64(m)/float64(nh), float64(nh.Microseconds())/1e3, float64(median(rss[mode]))/1024)
	}
}

// warmWasmProc runs one child of each mode once, so that the disk cache
// holds both compilations before anything is timed.
func warmWasmProc(b *testing.B) {
	for _, mode := range []string{"nochecks", "checks"} {
		stderr := &testutil.SyncBuffer{}
		c := startRaw(b, wasmProcTransport(b, mode, stderr))
		c.close()
		if _, err := peakRSS(stderr.String()); err != nil {
			b.Fatalf("warming the %s child: %v", mode, err)
		}
	}
}

// peakRSS finds the child's RSS line in its stderr.
func peakRSS(stderr string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), wasmProcRSS); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no RSS line in the child's stderr: " + stderr)
}
