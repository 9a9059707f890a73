package wasm

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

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// FuzzMeter: whatever the bytes, meter does not panic; what it makes of a
// module wazero accepts, wazero accepts too, at most twice as large (plus
// meterSlack); and the metered module computes what the original does.
// Both are instantiated and each exported function is called, in name
// order, with zeros and then with ones: the results, or the traps, must
// match, and so must the exported memories afterwards. The
// seeds are the hand-made modules of the meter's tests and wazero's own
// spec-test corpus (WebAssembly 1.0 and 2.0), from the module cache.
func FuzzMeter(f *testing.F) {
	f.Add(command([]byte{0}, [][]byte{fnBody(vec(), 0x03, 0x40, 0x0C, 0x00, end)}))
	f.Add(command([]byte{0, 2}, [][]byte{fnBody(vec(), 0x41, 5, 0x10, 2, 0x10, 0), fnBody(vec([]byte{2, i64}), 0x41, 0, 0x20, 0, 0x41, 9, 0xFC, 11, 0, 0x20, 0)}))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	// The stdin shim: its imports called, and imported by a module with
	// no function of its own (the rewrite adds the sections).
	f.Add(stdioCommand(setNonblock(0), drop, stdinNonblock, exit))
	f.Add(cat([]byte("\x00asm\x01\x00\x00\x00"),
		sect(secType, vec(functype([]byte{i32, i32}, []byte{i32}))),
		sect(secImport, vec(cat(appendName(nil, "wasi_snapshot_preview1"), appendName(nil, "fd_fdstat_set_flags"), []byte{0, 0})))))
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
	if err := instantiateMeter(ctx, rt); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, bin []byte) {
		metered, err := meter(bin, funcCaps{})
		if err != nil {
			return
		}
		if len(metered) > 2*len(bin)+meterSlack {
			t.Fatalf("metered module of %d bytes from %d: more than twice, plus %d", len(metered), len(bin), meterSlack)
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
		sameRuns(t, orig, cm, rt, mm)
	})
}

// sameRuns instantiates a and b, the original and its metered form, and
// holds b to what a computes.
func sameRuns(t *testing.T, rtA wazero.Runtime, a wazero.CompiledModule, rtB wazero.Runtime, b wazero.CompiledModule) {
	ctx := context.Background()
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	ia, errA := rtA.InstantiateModule(ctx, a, cfg)
	if errA != nil {
		return // it imports what neither runtime has (the spec tests' own module), or its start traps
	}
	defer ia.Close(ctx)
	ib, err := rtB.InstantiateModule(ctx, b, cfg)
	if err != nil {
		t.Fatalf("the original instantiates, its metered form does not: %v", err)
	}
	defer ib.Close(ctx)
	for _, start := range []string{"_start", "_initialize"} {
		if fa := ia.ExportedFunction(start); fa != nil && len(fa.Definition().ParamTypes()) == 0 {
			if !sameCall(t, start, fa, ib.ExportedFunction(start), nil) {
				return
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
			if !sameCall(t, name, fa, ib.ExportedFunction(name), params) {
				return
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
}

// sameCall calls fa and fb, the same function of the original and of its
// metered form, with params, and fails the test unless both return the
// same results or trap alike. It reports false when the calls cannot be
// compared further: one ran out of time (a loop), or the instance exited.
func sameCall(t *testing.T, name string, fa, fb api.Function, params []uint64) bool {
	if fb == nil {
		t.Fatalf("the metered module does not export %q", name)
	}
	call := func(f api.Function) ([]uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
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
		return false
	}
	switch {
	case (errA == nil) != (errB == nil):
		t.Fatalf("%s%v: original %v, %v; metered %v, %v", name, params, ra, errA, rb, errB)
	case errA != nil:
		la, lb := firstLine(errA), firstLine(errB)
		if la != lb {
			t.Fatalf("%s%v traps differently: %q, metered %q", name, params, la, lb)
		}
		return !strings.Contains(la, "exit_code")
	case !sameResults(fa.Definition().ResultTypes(), ra, rb):
		t.Fatalf("%s%v = %#x, metered %#x", name, params, ra, rb)
	}
	return true
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
