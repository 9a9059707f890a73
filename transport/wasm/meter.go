package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The meter: how a guest that never calls the host is stopped, and how it
// lets the host's garbage collector run, without wazero's termination
// checks (see the package doc, "Stopping a guest").
//
// meter rewrites a module before it is compiled. It adds a mutable i32
// global, the fuel, and an imported function, refuel, and at every point
// where a guest can go on without end it inserts a check:
//
//	fuel = fuel - 1; if fuel <= 0 { fuel = refuel() }
//
// The points are each function's entry (recursion), each loop's header,
// and every checkEvery instructions of code that has neither, so that no
// run of wasm code between two checks is longer than checkEvery
// instructions. A bulk memory or table operation (memory.copy, fill, init,
// table.copy, init, fill, grow), whose cost grows with its operand, sets
// the fuel to zero, so the next check calls refuel. refuel is a call out
// of wasm into Go, which is where the host's garbage collector can stop the
// guest's goroutine, and where a guest whose instance was killed is ended:
// it panics with the exit error wazero's own checks would have given.
//
// The guest cannot reach the fuel: its code is refused if it names a
// global or a function that its module does not have (which an unmetered
// module could not do either: wazero would refuse it), so the new global
// and function are the inserted code's alone.
//
// Only what wazero accepts by default is understood (WebAssembly 2.0:
// multi-value, bulk memory, reference types, SIMD, sign extension,
// saturating conversions); a module using anything else (tail calls,
// threads, exceptions) is refused with the offset of the instruction.

const (
	// fuelPerRefuel is how many checks pass between two calls of refuel:
	// a call out of wasm costs about what a hundred checks do, and a
	// thousand checks of a spinning loop take a few microseconds.
	fuelPerRefuel = 1000
	// checkEvery bounds the instructions run between two checks.
	checkEvery = 1000

	meterModule = "bingo_sandbox"
	meterRefuel = "refuel"
)

// instantiateMeter defines the functions metered modules import: refuel,
// and the stdin shim's hooks.
func instantiateMeter(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(meterModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(refuel), nil, []api.ValueType{api.ValueTypeI32}).
		Export(meterRefuel)
	i32 := api.ValueTypeI32
	for _, h := range stdinHooks {
		b = b.NewFunctionBuilder().WithGoModuleFunction(h.fn, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export(h.hook)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// refuel ends the guest if its instance is over (its context is done:
// Kill, Host.Close, an instantiation that took too long), and otherwise
// gives it fuel for fuelPerRefuel more checks.
func refuel(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		_ = mod.CloseWithExitCode(context.Background(), sys.ExitCodeContextCanceled)
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	stack[0] = fuelPerRefuel
}

// meterCacheVersion names the directory, under HostConfig.CacheDir, of
// the metered modules kept on disk. A change to what meter writes must
// change it, so that no module metered the old way is used again.
const meterCacheVersion = "metered-v2"

// metered returns the metered form of bin, whose sha256 is key: from the
// disk cache when it holds it, else made by meter and, with a disk cache,
// kept there. Metering a Go guest of a few MiB takes tens of
// milliseconds, a large part of a warm start; reading it back, one.
//
// The directory is trusted as wazero's compiled code beside it is: it is
// the person's, and no plugin can write to it. Each file ends with the
// CRC-32C of what precedes it, so a damaged file (a full disk, a crash)
// is metered afresh rather than compiled.
//
// It reports whether the module came from the disk cache: one made here
// is kept (keepMetered) only once wazero has compiled it, so a module
// wazero refuses leaves nothing behind.
func (h *Host) metered(key [32]byte, bin []byte, caps funcCaps) (out []byte, kept bool, err error) {
	if h.meterDir != "" {
		if out, ok := h.keptMetered(key); ok {
			return out, true, nil
		}
	}
	out, err = meter(bin, caps)
	return out, false, err
}

// keepMetered keeps out, the metered form of the module whose sha256 is
// key, in the disk cache, if there is one. A failure to keep it costs only
// the next start's time.
func (h *Host) keepMetered(key [32]byte, out []byte) {
	if h.meterDir != "" {
		keepWhole(h.meteredPath(key), binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)))
	}
}

// meteredPath is where the metered form of the module whose sha256 is key
// is kept.
func (h *Host) meteredPath(key [32]byte) string {
	return filepath.Join(h.meterDir, hex.EncodeToString(key[:])+".wasm")
}

// keptMetered returns the metered form of the module whose sha256 is key,
// if the disk cache holds it whole.
func (h *Host) keptMetered(key [32]byte) ([]byte, bool) {
	// Read as any cache file is (capped, never a FIFO). A metered module
	// is its original plus its checks, a few percent for a Go guest; one
	// past the cap is metered afresh each time, costing time, not safety.
	kept, err := capped.Read(h.meteredPath(key), 2*MaxModuleSize)
	if err != nil || len(kept) <= 4 {
		return nil, false
	}
	body, sum := kept[:len(kept)-4], kept[len(kept)-4:]
	return body, binary.LittleEndian.Uint32(sum) == crc32.Checksum(body, castagnoli)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errMeter is the error of a module the meter cannot rewrite.
var errMeter = errors.New("not a module the sandbox can run")

// meter returns bin with the fuel checks inserted (see above), or an
// error saying what in it could not be metered. A function over one of
// caps' bounds is refused with a *BoundError, as is a module whose
// metered form would be more than twice its size (plus meterSlack for
// the declarations every rewrite adds): its checks, not its code, would
// be most of what the host holds and wazero compiles.
func meter(bin []byte, caps funcCaps) ([]byte, error) {
	m, err := parseSections(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMeter, err)
	}
	out, err := m.rewrite(caps, 2*len(bin)+meterSlack)
	var bound *BoundError
	switch {
	case errors.As(err, &bound):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errMeter, err)
	}
	return out, nil
}

// meterSlack is what a metered module may hold beyond twice its
// original: the type, import, global and shim declarations the rewrite
// adds, which a module of a few bytes would otherwise be refused for.
const meterSlack = 1024

// funcCaps are the bounds meter holds each function body to; a zero
// field is no bound.
type funcCaps struct {
	bytes  int // the body's size, locals included
	blocks int // its block, loop and if instructions
}

// Section ids.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secCount    = 12
)

type section struct {
	id   byte
	body []byte
}

// wasmModule is a module as the meter sees it: its sections, undecoded,
// and the counts that the rewrite shifts or extends.
type wasmModule struct {
	header   []byte
	sections []section

	types, funcImports, globalImports, funcs, globals uint32

	params    []uint32 // each type's parameter count
	sigs      [][]byte // each type's parameters and results, encoded with the shortest counts
	funcTypes []uint32 // each defined function's type
	shims     []shim   // the WASI imports the stdin shim wraps
}

// shim is a WASI import that the rewrite routes through a function of its
// own, which calls the import and then a hook (stdin.go).
type shim struct {
	fn   uint32 // the import's function index
	typ  uint32 // its type
	hook int    // its entry in stdinHooks
}

// shimSig is the type of every shimmed import and of its wrapper: (i32,
// i32) → i32. The hooks take the wrapper's parameters and the import's
// result: hookSig, (i32, i32, i32) → i32.
var (
	shimSig = []byte{0x02, 0x7F, 0x7F, 0x01, 0x7F}
	hookSig = []byte{0x03, 0x7F, 0x7F, 0x7F, 0x01, 0x7F}
)

func parseSections(bin []byte) (*wasmModule, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || !bytes.Equal(bin[4:8], []byte{1, 0, 0, 0}) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	m := &wasmModule{header: bin[:8]}
	r := &reader{b: bin, pos: 8}
	for r.pos < len(r.b) {
		id := r.byte()
		body := r.bytes(r.u32())
		if r.err != nil {
			return nil, r.err
		}
		m.sections = append(m.sections, section{id, body})
		if err := m.count(id, body); err != nil {
			return nil, fmt.Errorf("section %d: %v", id, err)
		}
	}
	return m, nil
}

// count records what a section declares that the rewrite needs to know.
func (m *wasmModule) count(id byte, body []byte) error {
	r := &reader{b: body}
	switch id {
	case secType:
		m.types = r.u32()
		for i := uint32(0); i < m.types && r.err == nil; i++ {
			if form := r.byte(); form != 0x60 {
				return fmt.Errorf("type %d is not a function type", i)
			}
			params := r.u32()
			sig := appendU32(nil, params)
			sig = append(sig, r.bytes(params)...)
			results := r.u32()
			sig = appendU32(sig, results)
			sig = append(sig, r.bytes(results)...)
			m.params = append(m.params, params)
			m.sigs = append(m.sigs, sig)
		}
	case secFunction:
		m.funcs = r.u32()
		for i := uint32(0); i < m.funcs && r.err == nil; i++ {
			m.funcTypes = append(m.funcTypes, r.u32())
		}
	case secGlobal:
		m.globals = r.u32()
	case secImport:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			module, name := r.name(), r.name()
			switch kind := r.byte(); kind {
			case 0: // func
				typ := r.u32()
				if hook := stdinHook(module, name); hook >= 0 && typ < uint32(len(m.sigs)) && bytes.Equal(m.sigs[typ], shimSig) {
					m.shims = append(m.shims, shim{fn: m.funcImports, typ: typ, hook: hook})
				}
				m.funcImports++
			case 1: // table
				r.byte()
				r.limits()
			case 2: // memory
				r.limits()
			case 3: // global
				r.byte()
				r.byte()
				m.globalImports++
			default:
				return fmt.Errorf("import of kind %d", kind)
			}
		}
	}
	return r.err
}

// rewrite makes the metered module: the new types, imports, global and
// functions (the shims'), every function index past the imports shifted
// by the imports added, calls of a shimmed import routed through its
// shim, and the checks.
func (m *wasmModule) rewrite(caps funcCaps, limit int) ([]byte, error) {
	rw := &rewriter{
		caps:           caps,
		oldFuncImports: m.funcImports,
		funcs:          m.funcImports + m.funcs,
		globals:        m.globalImports + m.globals,
		types:          m.types,
		params:         m.params,
		funcTypes:      m.funcTypes,
		shims:          m.shims,
	}
	var out bytes.Buffer
	out.Write(m.header)
	emit := func(id byte, body []byte) {
		out.WriteByte(id)
		out.Write(appendU32(nil, uint32(len(body))))
		out.Write(body)
	}
	// The sections the rewrite adds to are added, empty, where the
	// module has none, in the place the format's order gives them.
	missing := []byte{secType, secImport, secGlobal}
	if len(m.shims) > 0 {
		missing = []byte{secType, secImport, secFunction, secGlobal, secCode}
	}
	for _, s := range m.sections {
		missing = slices.DeleteFunc(missing, func(id byte) bool { return id == s.id })
	}
	var sections []section
	for _, s := range m.sections {
		for len(missing) > 0 && s.id != secCustom && sectionRank(missing[0]) < sectionRank(s.id) {
			sections = append(sections, section{missing[0], []byte{0}})
			missing = missing[1:]
		}
		sections = append(sections, s)
	}
	for _, id := range missing {
		sections = append(sections, section{id, []byte{0}})
	}
	for _, s := range sections {
		// What the code section may grow to: the limit less what is
		// written, less the section's own id and size.
		rw.room = limit - out.Len() - 6
		body, err := rw.section(s)
		var bound *BoundError
		if errors.As(err, &bound) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %v", s.id, err)
		}
		if body != nil {
			emit(s.id, body)
		}
		if out.Len() > limit {
			return nil, growthError()
		}
	}
	return out.Bytes(), nil
}

// sectionRank is a known section's place in the order the binary
// format requires (the data count section comes before the code).
func sectionRank(id byte) int {
	if id == secCount {
		return int(secElement) + 1
	}
	if id >= secCode {
		return int(id) + 1
	}
	return int(id)
}

// rewriter carries the index arithmetic of one rewrite.
type rewriter struct {
	oldFuncImports uint32 // function indices from here up move up by added()
	funcs          uint32 // the module's own function count, imports included
	globals        uint32 // the module's own global count, imports included
	types          uint32 // the module's own type count
	params         []uint32
	funcTypes      []uint32
	shims          []shim
	caps           funcCaps
	// room is how long the section being rewritten may grow before the
	// metered module is past its limit (meter): the code section is
	// refused as it grows past it, not once it is whole.
	room int

	buf    []byte // a body's code as it is rewritten
	blocks int    // the block, loop and if instructions of that body so far
}

// fuel is the new global's index: the first after the module's own.
func (rw *rewriter) fuel() uint32 { return rw.globals }

// refuel is the first new import's function index: the first after the
// module's own imported functions, which is why the others move up. The
// shims' hooks follow it.
func (rw *rewriter) refuel() uint32 { return rw.oldFuncImports }

func (rw *rewriter) hook(i int) uint32 { return rw.oldFuncImports + 1 + uint32(i) }

// added is how many functions the rewrite imports.
func (rw *rewriter) added() uint32 { return 1 + uint32(len(rw.shims)) }

// wrapper is the function index of the i-th shim: after the module's own
// functions.
func (rw *rewriter) wrapper(i int) uint32 { return rw.funcs + rw.added() + uint32(i) }

// fn maps a function index of the module to the rewritten one, refusing
// one the module does not have: a shimmed import's calls go to its shim.
func (rw *rewriter) fn(idx uint32) (uint32, error) {
	for i, s := range rw.shims {
		if idx == s.fn {
			return rw.wrapper(i), nil
		}
	}
	return rw.shifted(idx)
}

// shifted maps a function index to where the function itself now is,
// refusing one the module does not have.
func (rw *rewriter) shifted(idx uint32) (uint32, error) {
	if idx >= rw.funcs {
		return 0, fmt.Errorf("function index %d out of range", idx)
	}
	if idx >= rw.oldFuncImports {
		idx += rw.added()
	}
	return idx, nil
}

func (rw *rewriter) global(idx uint32) error {
	if idx >= rw.globals {
		return fmt.Errorf("global index %d out of range", idx)
	}
	return nil
}

// section returns a section's rewritten body; nil drops the section.
func (rw *rewriter) section(s section) ([]byte, error) {
	r := &reader{b: s.body}
	var w []byte
	switch s.id {
	case secType:
		n := r.u32()
		w = appendU32(w, n+2)
		w = append(w, r.rest()...)
		w = append(w, 0x60, 0x00, 0x01, 0x7F) // type rw.types: () -> i32, refuel's
		w = append(w, 0x60)                   // type rw.types+1: the hooks'
		w = append(w, hookSig...)
	case secImport:
		n := r.u32()
		w = appendU32(w, n+rw.added())
		w = append(w, r.rest()...)
		w = appendName(w, meterModule)
		w = appendName(w, meterRefuel)
		w = append(w, 0x00)
		w = appendU32(w, rw.types)
		for _, s := range rw.shims {
			w = appendName(w, meterModule)
			w = appendName(w, stdinHooks[s.hook].hook)
			w = append(w, 0x00)
			w = appendU32(w, rw.types+1)
		}
	case secFunction:
		n := r.u32()
		w = appendU32(w, n+uint32(len(rw.shims)))
		w = append(w, r.rest()...)
		for _, s := range rw.shims {
			w = appendU32(w, s.typ)
		}
	case secGlobal:
		n := r.u32()
		w = appendU32(w, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			start := r.pos
			r.byte() // value type
			r.byte() // mutability
			w = append(w, r.b[start:r.pos]...)
			var err error
			if w, err = rw.constExpr(r, w); err != nil {
				return nil, err
			}
		}
		w = append(w, 0x7F, 0x01, 0x41) // mutable i32, i32.const fuelPerRefuel
		w = appendS32(w, fuelPerRefuel)
		w = append(w, 0x0B)
	case secExport:
		n := r.u32()
		w = appendU32(w, n)
		for i := uint32(0); i < n && r.err == nil; i++ {
			w = appendName(w, r.name())
			kind := r.byte()
			idx := r.u32()
			var err error
			switch kind {
			case 0:
				idx, err = rw.fn(idx)
			case 3:
				err = rw.global(idx)
			}
			if err != nil {
				return nil, err
			}
			w = append(w, kind)
			w = appendU32(w, idx)
		}
	case secStart:
		idx, err := rw.fn(r.u32())
		if err != nil {
			return nil, err
		}
		w = appendU32(w, idx)
	case secElement:
		var err error
		if w, err = rw.elements(r); err != nil {
			return nil, err
		}
	case secCode:
		var err error
		if w, err = rw.code(r); err != nil {
			return nil, err
		}
	case secCustom:
		if name := (&reader{b: s.body}).name(); name == "name" {
			return rw.names(s.body), nil
		}
		return s.body, nil
	default:
		return s.body, nil
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.pos != len(r.b) {
		return nil, fmt.Errorf("%d bytes left over", len(r.b)-r.pos)
	}
	return w, nil
}

// constExpr copies a constant expression, up to and with its end,
// mapping ref.func and checking global.get.
func (rw *rewriter) constExpr(r *reader, w []byte) ([]byte, error) {
	for r.err == nil {
		op := r.byte()
		w = append(w, op)
		switch op {
		case 0x0B: // end
			return w, nil
		case 0x41: // i32.const
			w = append(w, r.leb(5)...)
		case 0x42: // i64.const
			w = append(w, r.leb(10)...)
		case 0x43:
			w = append(w, r.bytes(4)...)
		case 0x44:
			w = append(w, r.bytes(8)...)
		case 0xFD: // v128.const
			sub := r.u32()
			if sub != 12 {
				return nil, fmt.Errorf("constant expression: opcode 0xfd %d", sub)
			}
			w = appendU32(w, sub)
			w = append(w, r.bytes(16)...)
		case 0x23: // global.get
			idx := r.u32()
			if err := rw.global(idx); err != nil {
				return nil, err
			}
			w = appendU32(w, idx)
		case 0xD0: // ref.null
			w = append(w, r.byte())
		case 0xD2: // ref.func
			idx, err := rw.fn(r.u32())
			if err != nil {
				return nil, err
			}
			w = appendU32(w, idx)
		default:
			return nil, fmt.Errorf("constant expression: opcode %#x", op)
		}
	}
	return nil, r.err
}

// elements copies the element section, mapping the function indices.
func (rw *rewriter) elements(r *reader) ([]byte, error) {
	n := r.u32()
	w := appendU32(nil, n)
	var err error
	for i := uint32(0); i < n && r.err == nil && err == nil; i++ {
		flags := r.u32()
		w = appendU32(w, flags)
		if flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		if flags&2 != 0 && flags&1 == 0 { // an explicit table index
			w = appendU32(w, r.u32())
		}
		if flags&1 == 0 { // active: an offset
			if w, err = rw.constExpr(r, w); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // an element kind or a reference type
			w = append(w, r.byte())
		}
		count := r.u32()
		w = appendU32(w, count)
		for j := uint32(0); j < count && r.err == nil; j++ {
			if flags&4 != 0 {
				if w, err = rw.constExpr(r, w); err != nil {
					return nil, err
				}
				continue
			}
			idx, err := rw.fn(r.u32())
			if err != nil {
				return nil, err
			}
			w = appendU32(w, idx)
		}
	}
	return w, r.err
}

// names copies the name section with its function indices mapped (the
// function names, and the local and label names, which are keyed by
// function); a name section that does not parse is dropped, as wazero
// ignores one it cannot read.
func (rw *rewriter) names(body []byte) []byte {
	r := &reader{b: body}
	w := appendName(nil, r.name())
	for r.pos < len(r.b) && r.err == nil {
		id := r.byte()
		sub := &reader{b: r.bytes(r.u32())}
		if id < 1 || id > 3 {
			w = append(w, id)
			w = appendU32(w, uint32(len(sub.b)))
			w = append(w, sub.b...)
			continue
		}
		var sw []byte
		n := sub.u32()
		sw = appendU32(sw, n)
		for i := uint32(0); i < n && sub.err == nil; i++ {
			idx, err := rw.shifted(sub.u32())
			if err != nil {
				return nil
			}
			sw = appendU32(sw, idx)
			if id == 1 {
				sw = appendName(sw, sub.name())
				continue
			}
			m := sub.u32() // an inner name map: index, name
			sw = appendU32(sw, m)
			for j := uint32(0); j < m && sub.err == nil; j++ {
				sw = appendU32(sw, sub.u32())
				sw = appendName(sw, sub.name())
			}
		}
		if sub.err != nil || sub.pos != len(sub.b) {
			return nil
		}
		w = append(w, id)
		w = appendU32(w, uint32(len(sw)))
		w = append(w, sw...)
	}
	if r.err != nil {
		return nil
	}
	return w
}

// code rewrites every function body, and adds the shims'.
func (rw *rewriter) code(r *reader) ([]byte, error) {
	n := r.u32()
	w := appendU32(nil, n+uint32(len(rw.shims)))
	var body []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		b := &reader{b: r.bytes(r.u32())}
		if r.err != nil {
			break
		}
		fn := rw.oldFuncImports + i
		if i >= uint32(len(rw.funcTypes)) || rw.funcTypes[i] >= uint32(len(rw.params)) {
			return nil, fmt.Errorf("function %d: no type", fn)
		}
		if rw.caps.bytes > 0 && len(b.b) > rw.caps.bytes {
			return nil, &BoundError{Bound: BoundFunctionKiB, Limit: int64(rw.caps.bytes), Size: int64(len(b.b)), Function: int64(fn)}
		}
		var err error
		body, err = rw.body(b, body[:0], rw.params[rw.funcTypes[i]], rw.room-len(w))
		var bound *BoundError
		if errors.As(err, &bound) {
			bound.Function = int64(fn)
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("function %d: %v", fn, err)
		}
		w = appendU32(w, uint32(len(body)))
		w = append(w, body...)
		if len(w) > rw.room {
			return nil, growthError()
		}
	}
	for i, s := range rw.shims {
		body = rw.shimBody(body[:0], s, i)
		w = appendU32(w, uint32(len(body)))
		w = append(w, body...)
	}
	return w, r.err
}

// shimBody is the i-th shim, s's: hook(a, b, import(a, b)). It has no
// check, as it has neither loop nor call back into the guest.
func (rw *rewriter) shimBody(w []byte, s shim, i int) []byte {
	w = append(w, 0x00)                               // no locals
	w = append(w, 0x20, 0, 0x20, 1, 0x20, 0, 0x20, 1) // local.get 0, 1, 0, 1
	w = append(w, 0x10)                               // call the import: its index is below the shift
	w = appendU32(w, s.fn)
	w = append(w, 0x10)
	w = appendU32(w, rw.hook(i))
	return append(w, 0x0B)
}

// check is the inserted check: fuel = fuel - 1; if fuel <= 0 { fuel = refuel() }.
func (rw *rewriter) check(w []byte) []byte {
	w = append(w, 0x23)
	w = appendU32(w, rw.fuel())
	w = append(w, 0x41, 0x01, 0x6B, 0x24) // i32.const 1, i32.sub, global.set
	w = appendU32(w, rw.fuel())
	w = append(w, 0x23)
	w = appendU32(w, rw.fuel())
	w = append(w, 0x41, 0x00, 0x4C, 0x04, 0x40, 0x10) // i32.const 0, i32.le_s, if, call
	w = appendU32(w, rw.refuel())
	w = append(w, 0x24) // global.set
	w = appendU32(w, rw.fuel())
	return append(w, 0x0B) // end
}

// body rewrites one function body into w: its locals (and one more, the
// scratch local, if a bulk operation needs it), a check at its entry, and
// its code with checks inserted.
func (rw *rewriter) body(r *reader, w []byte, params uint32, room int) ([]byte, error) {
	start := r.pos
	locals := uint64(params)
	decls := r.u32()
	declsStart := r.pos
	for n := decls; n > 0 && r.err == nil; n-- {
		locals += uint64(r.u32())
		r.byte() // their type
	}
	if r.err != nil {
		return nil, r.err
	}
	if locals >= 1<<32-1 {
		return nil, errors.New("too many locals")
	}
	declsEnd := r.pos
	code, bulk, err := rw.instructions(r, rw.buf[:0], uint32(locals), room)
	rw.buf = code
	if err != nil {
		return nil, err
	}
	if !bulk {
		w = append(w, r.b[start:declsEnd]...)
	} else {
		w = appendU32(w, decls+1)
		w = append(w, r.b[declsStart:declsEnd]...)
		w = append(w, 0x01, 0x7F) // one i32: the scratch local
	}
	return append(w, code...), nil
}

// instructions rewrites the code of a body whose scratch local would be
// the one numbered scratch, and says whether it used that local. It
// refuses a body with more blocks than rw.caps allows, and one whose
// rewrite grows past room bytes.
func (rw *rewriter) instructions(r *reader, w []byte, scratch uint32, room int) (_ []byte, bulk bool, _ error) {
	w = rw.check(w)
	depth, since := 1, 0
	rw.blocks = 0
	for r.err == nil && r.pos < len(r.b) {
		at := r.pos
		op := r.byte()
		if op == 0xFC {
			var err error
			var charged bool
			if w, charged, err = rw.misc(r, w, scratch); err != nil {
				return nil, false, fmt.Errorf("at byte %d: %v", at, err)
			}
			bulk = bulk || charged
			since++
			continue
		}
		w = append(w, op)
		since++
		switch {
		case op == 0x02 || op == 0x04: // block, if
			w = append(w, r.blockType()...)
			depth++
			if err := rw.block(1); err != nil {
				return nil, false, err
			}
		case op == 0x03: // loop
			w = append(w, r.blockType()...)
			depth++
			if err := rw.block(loopWeight); err != nil {
				return nil, false, err
			}
			w = rw.check(w)
			since = 0
			if len(w) > room {
				return nil, false, growthError()
			}
		case op == 0x0B: // end
			depth--
			if depth == 0 {
				if r.pos != len(r.b) {
					return nil, false, fmt.Errorf("code after the end, at byte %d", at)
				}
				return w, bulk, nil
			}
		case op == 0x0C || op == 0x0D: // br, br_if
			w = appendU32(w, r.u32())
		case op == 0x0E: // br_table
			n := r.u32()
			w = appendU32(w, n)
			for i := uint32(0); i <= n && r.err == nil; i++ {
				w = appendU32(w, r.u32())
			}
		case op == 0x10 || op == 0xD2: // call, ref.func
			idx, err := rw.fn(r.u32())
			if err != nil {
				return nil, false, err
			}
			w = appendU32(w, idx)
		case op == 0x11: // call_indirect
			w = appendU32(w, r.u32())
			w = appendU32(w, r.u32())
		case op == 0x1C: // select with types
			n := r.u32()
			w = appendU32(w, n)
			w = append(w, r.bytes(n)...)
		case op >= 0x20 && op <= 0x22, op == 0x25, op == 0x26: // locals, table.get/set
			w = appendU32(w, r.u32())
		case op == 0x23 || op == 0x24: // global.get/set
			idx := r.u32()
			if err := rw.global(idx); err != nil {
				return nil, false, err
			}
			w = appendU32(w, idx)
		case op >= 0x28 && op <= 0x3E: // loads and stores: memarg
			w = appendU32(w, r.u32())
			w = appendU32(w, r.u32())
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			w = appendU32(w, r.u32())
		case op == 0x41:
			w = append(w, r.leb(5)...)
		case op == 0x42:
			w = append(w, r.leb(10)...)
		case op == 0x43:
			w = append(w, r.bytes(4)...)
		case op == 0x44:
			w = append(w, r.bytes(8)...)
		case op == 0xD0: // ref.null
			w = append(w, r.byte())
		case op == 0xFD:
			var err error
			if w, err = simd(r, w); err != nil {
				return nil, false, fmt.Errorf("at byte %d: %v", at, err)
			}
		case op <= 0x01, op == 0x05, op == 0x0F, op == 0x1A, op == 0x1B, op >= 0x45 && op <= 0xC4, op == 0xD1:
			// no immediates
		default:
			return nil, false, fmt.Errorf("opcode %#x at byte %d is not supported", op, at)
		}
		if since >= checkEvery {
			w = rw.check(w)
			since = 0
		}
	}
	if r.err != nil {
		return nil, false, r.err
	}
	return nil, false, errors.New("no end")
}

// loopWeight is what a loop counts for against funcCaps.blocks: its check
// adds an if and a call, and wazero's compile time of a function of
// metered loops grows as that of four times as many blocks does.
const loopWeight = 4

// block counts a block or if (weight 1) or a loop (loopWeight) in the
// body, refusing one past rw.caps.blocks.
func (rw *rewriter) block(weight int) error {
	rw.blocks += weight
	if rw.caps.blocks > 0 && rw.blocks > rw.caps.blocks {
		return &BoundError{Bound: BoundBlocks, Limit: int64(rw.caps.blocks), Size: int64(rw.blocks)}
	}
	return nil
}

// misc copies a 0xFC instruction (saturating conversions, bulk memory and
// table operations). One whose cost grows with its count operand (the
// last, on top of the stack) is charged for it: the count is kept in the
// scratch local, and after the operation the fuel goes down by one per
// KiB or per thousand table elements, roughly what a check's worth of
// other instructions costs. It reports whether it charged.
func (rw *rewriter) misc(r *reader, w []byte, scratch uint32) ([]byte, bool, error) {
	sub := r.u32()
	var imm []byte
	charge := false
	switch {
	case sub <= 7: // trunc_sat
	case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init, memory.copy, table.init, table.copy
		imm = appendU32(imm, r.u32())
		imm = appendU32(imm, r.u32())
		charge = true
	case sub == 9 || sub == 13 || sub == 16: // data.drop, elem.drop, table.size
		imm = appendU32(imm, r.u32())
	case sub == 11 || sub == 15 || sub == 17: // memory.fill, table.grow, table.fill
		imm = appendU32(imm, r.u32())
		charge = true
	default:
		return nil, false, fmt.Errorf("opcode 0xfc %d is not supported", sub)
	}
	if charge {
		w = append(w, 0x22) // local.tee
		w = appendU32(w, scratch)
	}
	w = append(w, 0xFC)
	w = appendU32(w, sub)
	w = append(w, imm...)
	if charge {
		w = append(w, 0x23) // global.get
		w = appendU32(w, rw.fuel())
		w = append(w, 0x20) // local.get
		w = appendU32(w, scratch)
		w = append(w, 0x41, 10, 0x76, 0x6B, 0x24) // i32.const 10, i32.shr_u, i32.sub, global.set
		w = appendU32(w, rw.fuel())
	}
	return w, charge, r.err
}

// simd copies a 0xFD instruction's immediates.
func simd(r *reader, w []byte) ([]byte, error) {
	sub := r.u32()
	w = appendU32(w, sub)
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores: memarg
		w = appendU32(w, r.u32())
		w = appendU32(w, r.u32())
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		w = append(w, r.bytes(16)...)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		w = append(w, r.byte())
	case sub >= 84 && sub <= 91: // load_lane, store_lane: memarg, lane
		w = appendU32(w, r.u32())
		w = appendU32(w, r.u32())
		w = append(w, r.byte())
	case sub <= 255:
		// no immediates
	default:
		return nil, fmt.Errorf("opcode 0xfd %d is not supported", sub)
	}
	return w, r.err
}

// reader decodes the binary format; its first error sticks, and every
// read after it returns zero values.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, r.pos)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil || uint64(len(r.b)-r.pos) < uint64(n) {
		r.fail("unexpected end")
		return nil
	}
	r.pos += int(n)
	return r.b[r.pos-int(n) : r.pos]
}

func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	b := r.b[r.pos:]
	r.pos = len(r.b)
	return b
}

// leb returns the bytes of one LEB128 number of at most max bytes.
func (r *reader) leb(max int) []byte {
	start := r.pos
	for i := 0; ; i++ {
		if i == max {
			r.fail("LEB128 number too long")
			return nil
		}
		if r.byte()&0x80 == 0 || r.err != nil {
			break
		}
	}
	if r.err != nil {
		return nil
	}
	return r.b[start:r.pos]
}

func (r *reader) u32() uint32 {
	var v uint64
	for i, c := range r.leb(5) {
		v |= uint64(c&0x7F) << (7 * i)
	}
	if v > 0xFFFFFFFF {
		r.fail("u32 out of range")
		return 0
	}
	return uint32(v)
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

func (r *reader) limits() {
	switch flags := r.byte(); flags {
	case 0, 2:
		r.u32()
	case 1, 3:
		r.u32()
		r.u32()
	default:
		r.fail(fmt.Sprintf("limits flags %d", flags))
	}
}

// blockType returns a block type's bytes: empty (0x40), a value type, or
// a type index (a positive s33).
func (r *reader) blockType() []byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail("unexpected end")
		return nil
	}
	if c := r.b[r.pos]; c == 0x40 || c >= 0x6F && c <= 0x7F {
		r.pos++
		return r.b[r.pos-1 : r.pos]
	}
	return r.leb(5)
}

func appendU32(w []byte, v uint32) []byte {
	for v >= 0x80 {
		w = append(w, byte(v)|0x80)
		v >>= 7
	}
	return append(w, byte(v))
}

func appendS32(w []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(w, c)
		}
		w = append(w, c|0x80)
	}
}

func appendName(w []byte, s string) []byte {
	w = appendU32(w, uint32(len(s)))
	return append(w, s...)
}
