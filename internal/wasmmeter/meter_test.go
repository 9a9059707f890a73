package wasmmeter

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// compile compiles bin in a runtime of its own, which the test closes at
// its end.
func compile(t *testing.T, bin []byte) (wazero.CompiledModule, error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	return rt.CompileModule(ctx, bin)
}

// TestMeterPlacesItsChecks: a check at the entry, one every CheckEvery
// straight-line instructions, and a bulk operation charged by its size
// through the scratch local: what bounds the work between two refuels
// where a loop header alone would not.
func TestMeterPlacesItsChecks(t *testing.T) {
	nops := bytes.Repeat([]byte{0x01}, 2*CheckEvery+10)
	bin := wasmtest.Command([]byte{0, 2}, [][]byte{
		wasmtest.Body(wasmtest.Vec(), nops...),
		wasmtest.Body(wasmtest.Vec([]byte{2, wasmtest.I64}), 0x41, 0, 0x20, 0, 0x41, 9, 0xFC, 11, 0, 0x20, 0),
	})
	metered, err := Meter(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The metered module's fuel is global 0, refuel function 1 (after
	// proc_exit), f's scratch local 3 (after its parameter and two i64s).
	rw := &rewriter{globals: 0, oldFuncImports: 1}
	check := rw.check(nil)
	if n := bytes.Count(metered, check); n != 1+2+1 {
		t.Errorf("%d checks, want 4: _start's entry, two in its %d nops, f's entry", n, len(nops))
	}
	charge := []byte{0x22, 3, 0xFC, 11, 0, 0x23, 0, 0x20, 3, 0x41, 10, 0x76, 0x6B, 0x24, 0}
	if !bytes.Contains(metered, charge) {
		t.Error("memory.fill is not charged through the scratch local")
	}
	if !bytes.Contains(metered, []byte{2, 2, wasmtest.I64, 1, wasmtest.I32}) {
		t.Error("f's locals do not end with the scratch i32")
	}
}

// TestHookReadsTypes: an import is hooked by its type's meaning, not its
// bytes: counts may be padded (a valid, longer LEB128), and a module with
// such a type is still hooked, and still compiles.
func TestHookReadsTypes(t *testing.T) {
	padded := []byte{0x60, 0x82, 0x00, wasmtest.I32, wasmtest.I32, 0x81, 0x00, wasmtest.I32} // (i32, i32) → i32, counts padded
	bin := wasmtest.Cat(wasmtest.Header,
		wasmtest.Sect(wasmtest.SecType, wasmtest.Cat([]byte{1}, padded)),
		wasmtest.Sect(wasmtest.SecImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Name(nil, "wasi_snapshot_preview1"), wasmtest.Name(nil, "fd_fdstat_set_flags"), []byte{0, 0}))))
	m, err := decode(bin, shim, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.hooked) != 1 || m.hooked[0].hook != "after_set" {
		t.Fatalf("hooked %+v, want fd_fdstat_set_flags's hook", m.hooked)
	}
	metered, err := Meter(bin, Options{Hooks: shim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile(t, metered); err != nil {
		t.Fatalf("the metered module does not compile: %v", err)
	}
}

// TestDecodeRefusesMalformedModules: what a validating decoder refuses,
// the meter refuses before it writes anything, saying what and where;
// wazero refuses each of these modules too.
func TestDecodeRefusesMalformedModules(t *testing.T) {
	types := wasmtest.Sect(wasmtest.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil)))
	funcs := wasmtest.Sect(wasmtest.SecFunction, wasmtest.Vec([]byte{0}))
	code := wasmtest.Sect(wasmtest.SecCode, wasmtest.Vec(wasmtest.Body(wasmtest.Vec())))
	for name, c := range map[string]struct {
		bin  []byte
		want string
	}{
		"code before functions":  {wasmtest.Cat(wasmtest.Header, types, code, funcs), "section 3 at byte 20 is out of order"},
		"two type sections":      {wasmtest.Cat(wasmtest.Header, types, types), "section 1 at byte 14 is out of order"},
		"an unknown section":     {wasmtest.Cat(wasmtest.Header, types, wasmtest.Sect(13, []byte{0})), "section id 13 at byte 14 is not one the meter knows"},
		"a size past the end":    {wasmtest.Cat(wasmtest.Header, []byte{wasmtest.SecType, 9, 1}), "unexpected end"},
		"bytes left over":        {wasmtest.Cat(wasmtest.Header, wasmtest.Sect(wasmtest.SecType, wasmtest.Cat(wasmtest.Vec(wasmtest.FuncType(nil, nil)), []byte{0x60}))), "section 1: 1 bytes left over"},
		"a function and no body": {wasmtest.Cat(wasmtest.Header, types, funcs), "1 functions declared, 0 bodies"},
		"a body and no function": {wasmtest.Cat(wasmtest.Header, types, code), "0 functions declared, 1 bodies"},
		"a custom name too long": {wasmtest.Cat(wasmtest.Header, wasmtest.Sect(wasmtest.SecCustom, []byte{5, 'n', 'a'})), "section 0: unexpected end"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Meter(c.bin, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Meter = %v, want %q", err, c.want)
			}
			if _, err := compile(t, c.bin); err == nil {
				t.Fatal("wazero accepts it")
			}
		})
	}
}

// TestMeterLimits: a body over a cap is refused for it, naming the
// function; a module that would grow past MaxSize (a loop every three
// bytes, each given a check) is refused as it is written.
func TestMeterLimits(t *testing.T) {
	loops := bytes.Repeat([]byte{0x03, 0x40, wasmtest.End}, 1000)
	for name, c := range map[string]struct {
		bin  []byte
		o    Options
		want LimitError
	}{
		"function bytes": {wasmtest.Command([]byte{0, 0}, [][]byte{wasmtest.Body(wasmtest.Vec()), wasmtest.Body(wasmtest.Vec(), bytes.Repeat([]byte{0x01}, 100)...)}),
			Options{MaxFunctionBytes: 64}, LimitError{Limit: FunctionBytes, Max: 64, Size: 102, Function: 2}},
		"blocks": {wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec(), bytes.Repeat([]byte{0x02, 0x40, wasmtest.End}, 11)...)}),
			Options{MaxBlocks: 10}, LimitError{Limit: Blocks, Max: 10, Size: 11, Function: 1}},
		"a loop counts LoopWeight": {wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec(), bytes.Repeat([]byte{0x03, 0x40, wasmtest.End}, 3)...)}),
			Options{MaxBlocks: 10}, LimitError{Limit: Blocks, Max: 10, Size: 3 * LoopWeight, Function: 1}},
		"growth": {wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec(), loops...)}),
			Options{}, LimitError{Limit: Growth, Max: int64(MaxSize(len(wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec(), loops...)}))))}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Meter(c.bin, c.o)
			var le *LimitError
			if !errors.As(err, &le) || *le != c.want {
				t.Fatalf("Meter = %v (%+v), want %+v", err, le, c.want)
			}
		})
	}
	// Under the bound, what is made is within MaxSize.
	some := wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec(), bytes.Repeat([]byte{0x03, 0x40, wasmtest.End}, 10)...)})
	if out, err := Meter(some, Options{}); err != nil || len(out) > MaxSize(len(some)) {
		t.Fatalf("Meter = %d bytes, %v: want at most %d", len(out), err, MaxSize(len(some)))
	}
}

// TestReplaceByName: in a Go module (go:buildid, global 0 a mutable i32),
// a function named in the name section, of the replacement's type, runs
// the replacement's body, metered; one of another type, a module without
// names, and a module of another toolchain or whose global 0 is not Go's
// stack pointer keep their own. _start exits with what f (function 2)
// returns.
func TestReplaceByName(t *testing.T) {
	names := func(name string) []byte {
		fnames := wasmtest.Vec(wasmtest.Name([]byte{2}, name))
		return wasmtest.Sect(wasmtest.SecCustom, wasmtest.Cat(wasmtest.Name(nil, "name"), []byte{1}, wasmtest.U32(nil, uint32(len(fnames))), fnames))
	}
	bodies := [][]byte{
		wasmtest.Body(wasmtest.Vec(), 0x41, 0, 0x10, 2, 0x10, 0), // proc_exit(f(0))
		wasmtest.Body(wasmtest.Vec(), 0x41, 7),                   // f: 7
	}
	goModule := func(global []byte, extra ...[]byte) []byte {
		return wasmtest.GoCommand(global, []byte{0, 2}, bodies, extra...)
	}
	sp := []byte{wasmtest.I32, 1}
	nine := Replacement{Name: "f", Params: []byte{wasmtest.I32}, Results: []byte{wasmtest.I32}, Body: []byte{0, 0x41, 9, wasmtest.End}}
	otherType := nine
	otherType.Params = nil
	for name, c := range map[string]struct {
		bin     []byte
		replace Replacement
		want    uint32
	}{
		"named":              {goModule(sp, names("f")), nine, 9},
		"another name":       {goModule(sp, names("g")), nine, 7},
		"another type":       {goModule(sp, names("f")), otherType, 7},
		"no name section":    {goModule(sp), nine, 7},
		"not a Go module":    {wasmtest.Command([]byte{0, 2}, bodies, names("f")), nine, 7},
		"global 0 immutable": {goModule([]byte{wasmtest.I32, 0}, names("f")), nine, 7},
		"global 0 an i64":    {goModule([]byte{wasmtest.I64, 1}, names("f")), nine, 7},
	} {
		t.Run(name, func(t *testing.T) {
			metered, err := Meter(c.bin, Options{Replace: []Replacement{c.replace}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			if err := instantiateHost(ctx, rt); err != nil {
				t.Fatal(err)
			}
			_, err = rt.InstantiateWithConfig(ctx, metered, wazero.NewModuleConfig())
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != c.want {
				t.Fatalf("exit %v, want code %d", err, c.want)
			}
		})
	}
}

// TestNamed: a function is named by the name section, not by its bytes.
func TestNamed(t *testing.T) {
	fnames := wasmtest.Vec(wasmtest.Name([]byte{1}, "main.f"))
	names := wasmtest.Sect(wasmtest.SecCustom, wasmtest.Cat(wasmtest.Name(nil, "name"), []byte{1}, wasmtest.U32(nil, uint32(len(fnames))), fnames))
	named := wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec())}, names)
	if !Named(named, "main.f") || Named(named, "main.g") {
		t.Error("the name section's function is not found, or another is")
	}
	inData := wasmtest.Command([]byte{0}, [][]byte{wasmtest.Body(wasmtest.Vec())}, wasmtest.Sect(wasmtest.SecCustom, wasmtest.Name(wasmtest.Name(nil, "other"), "main.f")))
	if Named(inData, "main.f") {
		t.Error("a name in another custom section counts")
	}
}
