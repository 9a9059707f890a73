package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// startModule starts the module at path in h; the test kills it at its end.
func startModule(t *testing.T, h *Host, path string) *probe {
	t.Helper()
	return startProbe(t, h, Config{Path: path, Name: "m"})
}

// TestMeterStopsGuests: a guest that never calls the host is stopped by
// Kill, and does not hold up the host's garbage collector meanwhile,
// whatever keeps it going: a loop, or recursion with no loop at all
// (which wazero's own termination checks, made only at loop headers,
// never stop).
func TestMeterStopsGuests(t *testing.T) {
	spinners := map[string][]byte{
		"loop": command([]byte{0}, [][]byte{fnBody(vec(), 0x03, 0x40, 0x0C, 0x00, end)}), // loop br 0 end
		// f(n): if n != 0 { f(n-1); f(n-1) }, called with 62: 2^62 calls.
		"recursion": command([]byte{0, 1}, [][]byte{
			fnBody(vec(), 0x41, 62, 0x10, 2),
			fnBody(vec(), 0x20, 0, 0x04, 0x40, 0x20, 0, 0x41, 1, 0x6B, 0x10, 2, 0x20, 0, 0x41, 1, 0x6B, 0x10, 2, end),
		}),
		"probe": nil,
	}
	for name, bin := range spinners {
		t.Run(name, func(t *testing.T) {
			var p *probe
			if bin == nil {
				p = startProbe(t, sharedHost, Config{})
				if got := p.ask("spin"); got != "spinning" {
					t.Fatalf("spin answered %q", got)
				}
			} else {
				p = startModule(t, sharedHost, writeModule(t, "m.wasm", bin))
				time.Sleep(50 * time.Millisecond) // well into its spin
			}
			gc := make(chan struct{})
			go func() { runtime.GC(); close(gc) }()
			select {
			case <-gc:
			case <-time.After(10 * time.Second):
				t.Fatal("runtime.GC did not return while the guest spun: the guest holds up the world")
			}
			select {
			case <-waitDone(p):
				t.Fatal("the guest ended before it was killed")
			default:
			}
			checkKill(t, p)
		})
	}
}

func waitDone(p *probe) <-chan struct{} {
	done := make(chan struct{})
	go func() { p.conn.Wait(); close(done) }()
	return done
}

// TestMeterRunsCode: metered code computes what it did before, through
// the constructs the rewrite touches: calls (every index moves), a loop,
// a bulk fill charged through a new local beside parameters and locals of
// the function's own, and SIMD immediates. Each module exits with the
// value it computed.
func TestMeterRunsCode(t *testing.T) {
	cases := map[string]struct {
		bin  []byte
		want uint32
	}{
		// _start: proc_exit(f(5)), f(n) sums n..1 in a loop.
		"loop and call": {command([]byte{0, 2}, [][]byte{
			fnBody(vec(), 0x41, 5, 0x10, 2, 0x10, 0),
			fnBody(vec([]byte{1, i32}), // local 1: the sum
				0x03, 0x40, // loop
				0x20, 1, 0x20, 0, 0x6A, 0x21, 1, // sum += n
				0x20, 0, 0x41, 1, 0x6B, 0x22, 0, // n -= 1 (tee)
				0x0D, 0, // br_if 0
				end, 0x20, 1),
		}), 15},
		// f(v): with two i64 locals of its own, fills 60000 bytes from
		// 1000 with v (memory.fill), and answers the byte at 50000.
		"bulk fill beside locals": {command([]byte{0, 2}, [][]byte{
			fnBody(vec(), 0x41, 42, 0x10, 2, 0x10, 0),
			fnBody(vec([]byte{2, i64}),
				0x41, 0xE8, 0x07, // i32.const 1000
				0x20, 0, // v
				0x41, 0xE0, 0xD4, 0x03, // i32.const 60000
				0xFC, 11, 0, // memory.fill
				0x41, 0xD0, 0x86, 0x03, // i32.const 50000
				0x2D, 0, 0), // i32.load8_u
		}), 42},
		// v128.const of 16 bytes 0..15, i8x16.shuffle reversing them,
		// extract lane 3 (now 12).
		"simd": {command([]byte{0}, [][]byte{
			fnBody(vec(), cat(
				[]byte{0xFD, 12}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
				[]byte{0xFD, 12}, make([]byte, 16),
				[]byte{0xFD, 13}, []byte{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
				[]byte{0xFD, 22, 3}, // i8x16.extract_lane_u 3
				[]byte{0x10, 0},
			)...),
		}), 12},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := startModule(t, sharedHost, writeModule(t, "m.wasm", c.bin))
			err := waitWithin(t, p.conn, 10*time.Second)
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != c.want {
				t.Fatalf("Wait = %v, want exit code %d", err, c.want)
			}
		})
	}
}

// TestMeterKeepsTheFuelToItself: code naming a global or a function its
// module does not have is refused, since after the rewrite such an index
// could name the fuel or refuel.
func TestMeterKeepsTheFuelToItself(t *testing.T) {
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"global.set": {fnBody(vec(), 0x41, 0, 0x24, 0), "global index 0 out of range"},
		"global.get": {fnBody(vec(), 0x23, 0, 0x1A), "global index 0 out of range"},
		"call":       {fnBody(vec(), 0x10, 2), "function index 2 out of range"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := meter(command([]byte{0}, [][]byte{c.body}), wasmmeter.Options{})
			if !errors.Is(err, errMeter) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("meter = %v, want %q", err, c.want)
			}
			p := sharedHost.Transport(Config{Path: writeModule(t, "m.wasm", command([]byte{0}, [][]byte{c.body})), Name: "m"})
			if conn, err := p.Start(context.Background()); err == nil {
				conn.Kill()
				t.Fatal("the module started")
			} else if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start = %v, want it to say %q", err, c.want)
			}
		})
	}
}

// TestMeterRefusesWhatItDoesNotKnow: an instruction outside what wazero
// accepts by default (here a tail call) is refused by name and offset.
func TestMeterRefusesWhatItDoesNotKnow(t *testing.T) {
	_, err := meter(command([]byte{0}, [][]byte{fnBody(vec(), 0x12, 1)}), wasmmeter.Options{})
	if !errors.Is(err, errMeter) || !strings.Contains(err.Error(), "opcode 0x12 at byte") {
		t.Fatalf("meter = %v", err)
	}
}

// TestMeterKeepsNames: the name section follows its functions to their new
// indices, so traps and listeners still name them.
func TestMeterKeepsNames(t *testing.T) {
	names := vec(cat(appendU32(nil, 0), appendName(nil, "proc_exit")), cat(appendU32(nil, 1), appendName(nil, "spin_forever")))
	custom := cat(appendName(nil, "name"), []byte{1}, appendU32(nil, uint32(len(names))), names)
	bin := command([]byte{0}, [][]byte{fnBody(vec(), 0x03, 0x40, 0x0C, 0x00, end)}, sect(wasmtest.SecCustom, custom))
	cm := compileMetered(t, bin)
	if got := cm.ExportedFunctions()["_start"].Name(); got != "spin_forever" {
		t.Fatalf("_start is named %q", got)
	}
	var imports []string
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		imports = append(imports, mod+"."+name)
	}
	if want := []string{"wasi_snapshot_preview1.proc_exit", wasmmeter.ImportModule + "." + wasmmeter.Refuel}; !equalStrings(imports, want) {
		t.Fatalf("imports %v, want %v", imports, want)
	}
}

// compileMetered meters bin and compiles it in a runtime of its own,
// which the test closes at its end.
func compileMetered(t *testing.T, bin []byte) wazero.CompiledModule {
	t.Helper()
	metered, err := meter(bin, wasmmeter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	cm, err := rt.CompileModule(ctx, metered)
	if err != nil {
		t.Fatalf("the metered module does not compile: %v", err)
	}
	return cm
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// BenchmarkMeter is the rewrite of the probe, a Go guest: what each load
// of a module pays before wazero compiles it (or finds it in its cache).
func BenchmarkMeter(b *testing.B) {
	bin, err := os.ReadFile(probeWasm)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		if _, err := meter(bin, wasmmeter.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMeterDiskCache: with a cache directory, a module is metered once
// and kept, a later Host uses what was kept, and a damaged file is
// metered afresh.
func TestMeterDiskCache(t *testing.T) {
	exitWith := func(code byte) []byte {
		return command([]byte{0}, [][]byte{fnBody(vec(), 0x41, code, 0x10, 0)})
	}
	cacheDir := t.TempDir()
	path := writeModule(t, "m.wasm", exitWith(15))
	run := func() uint32 {
		t.Helper()
		h, err := NewHost(context.Background(), HostConfig{CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		defer closeWithin(t, h, 30*time.Second)
		p := startModule(t, h, path)
		var exit *sys.ExitError
		if err := waitWithin(t, p.conn, 10*time.Second); !errors.As(err, &exit) {
			t.Fatalf("Wait = %v", err)
		}
		return exit.ExitCode()
	}
	if got := run(); got != 15 {
		t.Fatalf("exit %d", got)
	}
	kept, err := filepath.Glob(filepath.Join(cacheDir, meterCacheVersion, "*.wasm"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept %v, %v", kept, err)
	}

	// What is kept is what runs: put another module's metered form there.
	other, err := meter(exitWith(7), wasmmeter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept[0], diskrecord.Seal(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != 7 {
		t.Fatalf("exit %d: the kept module was not used", got)
	}

	// Damaged: one byte changed. It is metered again, and kept again.
	damaged := bytes.Clone(other)
	damaged[len(damaged)/2] ^= 0xFF
	if err := os.WriteFile(kept[0], append(damaged, diskrecord.Seal(other)[len(other):]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != 15 {
		t.Fatalf("exit %d after damage", got)
	}
	if _, err := diskrecord.ReadSealed(kept[0], 1<<20); err != nil {
		t.Fatalf("not kept again: %v", err)
	}
}

// TestTerminationChecks: the benchmarks' unmetered Host still runs a guest
// and stops a spinning one, by wazero's own checks; its modules carry no
// meter.
func TestTerminationChecks(t *testing.T) {
	h, err := NewHost(context.Background(), HostConfig{TerminationChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, h, 30*time.Second)
	p := startProbe(t, h, Config{})
	if got := p.ask("spin"); got != "spinning" {
		t.Fatalf("spin answered %q", got)
	}
	checkKill(t, p)
	cm, err := h.compiled(context.Background(), probeWasm, DefaultBounds())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cm.ImportedFunctions() {
		if mod, _, _ := d.Import(); mod == wasmmeter.ImportModule {
			t.Fatal("an unmetered Host's module imports the meter")
		}
	}
}

// A metered module is kept only once wazero has compiled it: one wazero
// refuses leaves nothing in the cache directory, and a kept one it
// refuses is removed, so that the next start meters the original afresh.
func TestMeterKeepsOnlyWhatCompiles(t *testing.T) {
	cacheDir := t.TempDir()
	h, err := NewHost(context.Background(), HostConfig{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, h, 30*time.Second)
	kept := func() []string {
		files, _ := filepath.Glob(filepath.Join(cacheDir, meterCacheVersion, "*.wasm"))
		return files
	}
	// _start leaves an i32 on the stack of a function that returns none:
	// the meter copies it, wazero's validation refuses it.
	invalid := command([]byte{0}, [][]byte{fnBody(vec(), 0x41, 0)})
	if _, err := h.Transport(Config{Path: writeModule(t, "bad.wasm", invalid), Name: "bad"}).Start(context.Background()); err == nil {
		t.Fatal("an invalid module started")
	}
	if files := kept(); len(files) != 0 {
		t.Fatalf("a module wazero refused was kept: %v", files)
	}

	good := command([]byte{0}, [][]byte{fnBody(vec(), 0x41, 9, 0x10, 0)})
	sum := sha256.Sum256(good)
	if err := os.MkdirAll(filepath.Join(cacheDir, meterCacheVersion), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.meteredPath(sum), diskrecord.Seal(invalid), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeModule(t, "good.wasm", good)
	if _, err := h.Transport(Config{Path: path, Name: "good"}).Start(context.Background()); err == nil {
		t.Fatal("the kept invalid module started")
	}
	if _, err := os.Stat(h.meteredPath(sum)); !os.IsNotExist(err) {
		t.Fatalf("the kept module wazero refused is still there: %v", err)
	}
	h2, err := NewHost(context.Background(), HostConfig{CacheDir: cacheDir}) // this Host keeps its failure for that version
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, h2, 30*time.Second)
	p := startModule(t, h2, path)
	if got := exitCode(t, waitWithin(t, p.conn, 10*time.Second)); got != 9 {
		t.Fatalf("exit code %d, want 9", got)
	}
	if files := kept(); len(files) != 1 {
		t.Fatalf("kept %v, want the good module's", files)
	}
}
