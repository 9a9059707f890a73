package wasmmeter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// FuzzMeter: whatever the bytes, Meter does not panic; what it makes of a
// module wazero accepts, wazero accepts too, within MaxSize; and the
// metered module computes what the original does. Both are instantiated
// with WASI (fake clocks and randomness, the same for both, and the same
// stdin), a command's _start is run, and each exported function is
// called, in name order, with zeros and then with ones: the results, or
// the traps, must match, and so must what they wrote to stdout and stderr
// and the exported memories afterwards. The stdin shim's imports are
// hooked, through hooks that change nothing.
//
// The seeds are small hand-made modules, real Go guests (the
// wordcount-wasm example and the test plugin, built for wasip1, which
// answer a handshake and two tool calls on stdin) and wazero's own
// spec-test corpus (WebAssembly 1.0 and 2.0), from the module cache.
func FuzzMeter(f *testing.F) {
	f.Add(spinModule)
	f.Add(wasmtest.Command([]byte{0, 2}, [][]byte{wasmtest.Body(wasmtest.Vec(), 0x41, 5, 0x10, 2, 0x10, 0), wasmtest.Body(wasmtest.Vec([]byte{2, wasmtest.I64}), 0x41, 0, 0x20, 0, 0x41, 9, 0xFC, 11, 0, 0x20, 0)}))
	f.Add(wasmtest.Header)
	// The hooked imports called, and imported by a module with no
	// function of its own (the rewrite adds the sections).
	f.Add(wasmtest.StdioCommand(setNonblock, drop, getFlags, drop, i32c(7), exit))
	f.Add(wasmtest.Cat(wasmtest.Header,
		wasmtest.Sect(wasmtest.SecType, wasmtest.Vec(wasmtest.FuncType([]byte{wasmtest.I32, wasmtest.I32}, []byte{wasmtest.I32}))),
		wasmtest.Sect(wasmtest.SecImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Name(nil, "wasi_snapshot_preview1"), wasmtest.Name(nil, "fd_fdstat_set_flags"), []byte{0, 0})))))
	// A Go guest must be compared whole: its runs end within startTime,
	// and it answers every request.
	strict := map[[32]byte]bool{}
	for _, bin := range goGuests(f) {
		f.Add(bin)
		strict[sha256.Sum256(bin)] = true
	}
	for _, bin := range spectestModules(f) {
		f.Add(bin)
	}
	ctx := context.Background()
	// The original runs with wazero's own termination checks, so that a
	// call that never returns can be stopped; the metered module with the
	// meter's.
	orig := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer orig.Close(ctx)
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, orig)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if err := instantiateHost(ctx, rt); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, bin []byte) {
		metered, err := Meter(bin, Options{Hooks: shim})
		if err != nil {
			return
		}
		if len(metered) > MaxSize(len(bin)) {
			t.Fatalf("metered module of %d bytes from %d: over MaxSize", len(metered), len(bin))
		}
		cm, err := orig.CompileModule(ctx, bin)
		if err != nil {
			return
		}
		defer cm.Close(ctx)
		mm, err := rt.CompileModule(ctx, metered)
		if err != nil {
			t.Fatalf("wazero accepts the module but not its metered form: %v", err)
		}
		defer mm.Close(ctx)
		out, whole := sameRuns(t, orig, cm, rt, mm)
		if len(bin) > 1<<20 && strict[sha256.Sum256(bin)] && (!whole || !bytes.Contains(out, []byte(`"id":3`))) {
			t.Fatalf("a Go guest's runs were not compared whole (whole %v), or it did not answer:\n%s", whole, out)
		}
	})
}

// spinModule exports "spin", a function that loops for ever.
var spinModule = wasmtest.Cat(wasmtest.Header,
	wasmtest.Sect(wasmtest.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
	wasmtest.Sect(wasmtest.SecFunction, wasmtest.Vec([]byte{0})),
	wasmtest.Sect(wasmtest.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Name(nil, "spin"), []byte{0, 0}))),
	wasmtest.Sect(wasmtest.SecCode, wasmtest.Vec(wasmtest.Body(wasmtest.Vec(), 0x03, 0x40, 0x0C, 0x00, wasmtest.End))))

// Instructions of the hand-made seeds, whose imports are StdioCommand's.
var (
	drop        = []byte{0x1A}
	exit        = []byte{0x10, 0}
	setNonblock = wasmtest.Cat(i32c(0), i32c(4), []byte{0x10, 2})                                  // fd_fdstat_set_flags(0, NONBLOCK)
	getFlags    = wasmtest.Cat(i32c(0), i32c(100), []byte{0x10, 1}, i32c(102), []byte{0x2F, 1, 0}) // fd_fdstat_get(0, 100), then its flags
)

func i32c(v int32) []byte { return append([]byte{0x41}, wasmtest.S32(nil, v)...) }

// shim hooks what the sandbox's stdin shim does, with hooks that return
// the import's result as it is (instantiateHost).
var shim = []Hook{
	{Module: "wasi_snapshot_preview1", Name: "fd_fdstat_get", After: "after_get"},
	{Module: "wasi_snapshot_preview1", Name: "fd_fdstat_set_flags", After: "after_set"},
}

// instantiateHost defines ImportModule in rt: Refuel, which ends a guest
// whose call's context is done and otherwise gives it FuelPerRefuel, and
// the shim's hooks.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	refuel := func(ctx context.Context, mod api.Module, stack []uint64) {
		if ctx.Err() != nil {
			_ = mod.CloseWithExitCode(context.Background(), sys.ExitCodeDeadlineExceeded)
			panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
		}
		stack[0] = FuelPerRefuel
	}
	same := func(_ context.Context, _ api.Module, stack []uint64) { stack[0] = stack[2] }
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(refuel), nil, []api.ValueType{i32}).Export(Refuel)
	for _, h := range shim {
		b = b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(same), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export(h.After)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// guestInput is every instance's stdin: a handshake and two tool calls,
// which the Go guests answer (one tool each knows, one it does not), and
// then its end.
const guestInput = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":5}}
{"jsonrpc":"2.0","id":2,"method":"tool/call","params":{"callId":"c2","name":"count","input":{"path":"/no/such/file"},"cwd":"/","session":"s","turn":1}}
{"jsonrpc":"2.0","id":3,"method":"tool/call","params":{"callId":"c3","name":"echo","input":{"text":"hello"},"cwd":"/","session":"s","turn":1}}
`

// sameRuns instantiates a and b, the original and its metered form, and
// holds b to what a computes. It returns what they wrote, and whether
// every call was compared: none ran out of time.
func sameRuns(t *testing.T, rtA wazero.Runtime, a wazero.CompiledModule, rtB wazero.Runtime, b wazero.CompiledModule) (out []byte, whole bool) {
	ctx := context.Background()
	var outA, outB bytes.Buffer
	config := func(out *bytes.Buffer) wazero.ModuleConfig {
		return wazero.NewModuleConfig().WithName("").WithStartFunctions().
			WithStdin(strings.NewReader(guestInput)).WithStdout(out).WithStderr(out)
	}
	ia, errA := rtA.InstantiateModule(ctx, a, config(&outA))
	if errA != nil {
		return nil, false // it imports what neither runtime has (the spec tests' own module), or its start traps
	}
	defer ia.Close(ctx)
	ib, err := rtB.InstantiateModule(ctx, b, config(&outB))
	if err != nil {
		t.Fatalf("the original instantiates, its metered form does not: %v", err)
	}
	defer ib.Close(ctx)
	if !sameCalls(t, a, ia, ib) {
		return nil, false
	}
	if !bytes.Equal(outA.Bytes(), outB.Bytes()) {
		t.Fatalf("the output differs:\n%s\nmetered:\n%s", outA.Bytes(), outB.Bytes())
	}
	return outA.Bytes(), true
}

// sameCalls runs the start function of ia and ib, instances of a and of
// its metered form, and calls their exported functions; then compares
// their memories, if neither has exited. It reports false if a call ran
// out of time.
func sameCalls(t *testing.T, a wazero.CompiledModule, ia, ib api.Module) bool {
	for _, start := range []string{"_start", "_initialize"} {
		if fa := ia.ExportedFunction(start); fa != nil && len(fa.Definition().ParamTypes()) == 0 {
			if next := sameCall(t, start, fa, ib.ExportedFunction(start), nil); next != nextCall {
				return next == exited
			}
		}
	}
	names := sortedKeys(a.ExportedFunctions())
	for _, args := range []uint64{0, 1} {
		for _, name := range names {
			fa := ia.ExportedFunction(name)
			params, ok := argsOf(fa.Definition().ParamTypes(), args)
			if !ok {
				continue
			}
			if next := sameCall(t, name, fa, ib.ExportedFunction(name), params); next != nextCall {
				return next == exited
			}
		}
	}
	for _, name := range sortedKeys(a.ExportedMemories()) {
		ma, mb := ia.ExportedMemory(name), ib.ExportedMemory(name)
		da, _ := ma.Read(0, ma.Size())
		db, _ := mb.Read(0, mb.Size())
		if !bytes.Equal(da, db) {
			t.Fatalf("memory %q differs after the calls (%d and %d bytes)", name, len(da), len(db))
		}
	}
	return true
}

// What can follow a call that both made alike.
const (
	nextCall = iota // the next call
	exited          // none: the instance exited
	timedOut        // none: a call ran out of time (a loop), and cannot be compared
)

// sameCall calls fa and fb, the same function of the original and of its
// metered form, with params, and fails the test unless both return the
// same results or trap alike. It says what can follow.
func sameCall(t *testing.T, name string, fa, fb api.Function, params []uint64) int {
	if fb == nil {
		t.Fatalf("the metered module does not export %q", name)
	}
	call := func(f api.Function) ([]uint64, error) {
		limit := callTime
		if name == "_start" {
			limit = startTime
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := f.Call(ctx, params...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return res, err
	}
	ra, errA := call(fa)
	rb, errB := call(fb)
	if errors.Is(errA, context.DeadlineExceeded) || errors.Is(errB, context.DeadlineExceeded) {
		return timedOut
	}
	switch {
	case (errA == nil) != (errB == nil):
		t.Fatalf("%s%v: original %v, %v; metered %v, %v", name, params, ra, errA, rb, errB)
	case errA != nil:
		la, lb := firstLine(errA), firstLine(errB)
		if la != lb {
			t.Fatalf("%s%v traps differently: %q, metered %q", name, params, la, lb)
		}
		if strings.Contains(la, "exit_code") {
			return exited
		}
	case !sameResults(fa.Definition().ResultTypes(), ra, rb):
		t.Fatalf("%s%v = %#x, metered %#x", name, params, ra, rb)
	}
	return nextCall
}

// sameResults reports whether a and b are the same results of the types
// given: numbers bit for bit, a reference by whether it is null (a
// reference is an address in its own instance).
func sameResults(types []api.ValueType, a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for _, typ := range types {
		switch typ {
		case api.ValueTypeExternref, 0x70: // funcref, which api does not name
			if (a[i] == 0) != (b[i] == 0) {
				return false
			}
			i++
		default: // a number, or a v128 in two slots
			n := 1
			if typ == 0x7B { // v128
				n = 2
			}
			if !slices.Equal(a[i:i+n], b[i:i+n]) {
				return false
			}
			i += n
		}
	}
	return true
}

// argsOf is a call's arguments: each parameter v (0 or 1) of its type;
// false for a parameter that is not a number (v128, references).
func argsOf(types []api.ValueType, v uint64) ([]uint64, bool) {
	args := make([]uint64, len(types))
	for i, typ := range types {
		switch typ {
		case api.ValueTypeI32, api.ValueTypeI64:
			args[i] = v
		case api.ValueTypeF32:
			args[i] = api.EncodeF32(float32(v))
		case api.ValueTypeF64:
			args[i] = api.EncodeF64(float64(v))
		default:
			return nil, false
		}
	}
	return args, true
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// callTime bounds a call of an exported function, and startTime a
// command's _start: a Go guest's runtime starts, reads its stdin and
// answers in it. A call that runs out cannot be compared.
const (
	callTime  = 200 * time.Millisecond
	startTime = 20 * time.Second * raceCost
)

// goGuests are the Go guests the seeds include, built for wasip1; none
// under the race detector, which finds nothing in code that runs on one
// goroutine and makes each of their four compilations ten times as slow.
func goGuests(f *testing.F) [][]byte {
	if raceCost > 1 {
		f.Log("no Go guest seeds under the race detector")
		return nil
	}
	dir := f.TempDir()
	var bins [][]byte
	for _, pkg := range []string{"examples/plugins/wordcount-wasm", "internal/testplugin/cmd/testplugin"} {
		out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
		build := exec.Command("go", "build", "-o", out, "github.com/bingo/bingo-plugin-rpc/"+pkg)
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := build.CombinedOutput(); err != nil {
			f.Fatalf("building %s for wasip1: %v\n%s", pkg, err, msg)
		}
		bin, err := os.ReadFile(out)
		if err != nil {
			f.Fatal(err)
		}
		bins = append(bins, bin)
	}
	return bins
}

// spectestModules are the binary modules of wazero's spec-test corpus for
// WebAssembly 1.0 and 2.0 (what the meter understands), each once, from
// the module cache: none if the go command cannot say where it is.
func spectestModules(f *testing.F) [][]byte {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tetratelabs/wazero").Output()
	if err != nil {
		f.Logf("no spec-test seeds: go list: %v", err)
		return nil
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "internal", "integration_test", "spectest")
	var mods [][]byte
	seen := map[[32]byte]bool{}
	for _, sub := range []string{"v1", "v2"} {
		paths, _ := filepath.Glob(filepath.Join(dir, sub, "testdata", "*.wasm"))
		for _, p := range paths {
			bin, err := os.ReadFile(p)
			if sum := sha256.Sum256(bin); err == nil && !seen[sum] {
				seen[sum] = true
				mods = append(mods, bin)
			}
		}
	}
	// Under the race detector, where compiling is ten times slower, every
	// fourth: a few seconds, where all four thousand take half a minute.
	if raceCost > 1 {
		some := mods[:0]
		for i, bin := range mods {
			if i%4 == 0 {
				some = append(some, bin)
			}
		}
		mods = some
	}
	if len(mods) == 0 {
		f.Logf("no spec-test seeds under %s", dir)
	}
	return mods
}
