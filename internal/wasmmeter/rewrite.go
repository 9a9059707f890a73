package wasmmeter

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/leb128"
)

// rewrite makes the metered module, of at most limit bytes: the new
// types, imports, global and functions (the hooks' wrappers), every
// function index past the imports shifted by the imports added, uses of
// a hooked import routed through its wrapper, and the checks.
func (m *module) rewrite(o Options, limit int) ([]byte, error) {
	rw := &rewriter{
		opts:           o,
		oldFuncImports: m.funcImports,
		funcs:          m.funcImports + m.funcs,
		globals:        m.globalImports + m.globals,
		types:          m.types,
		params:         m.params,
		funcTypes:      m.funcTypes,
		hooked:         m.hooked,
		replaced:       m.replaced,
	}
	var out bytes.Buffer
	out.Write(m.header)
	emit := func(id byte, body []byte) {
		out.WriteByte(id)
		out.Write(leb128.AppendUint32(nil, uint32(len(body))))
		out.Write(body)
	}
	// The sections the rewrite adds to are added, empty, where the
	// module has none, in the place the format's order gives them.
	missing := []byte{secType, secImport, secGlobal}
	if len(m.hooked) > 0 {
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
		var le *LimitError
		if errors.As(err, &le) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %v", s.id, err)
		}
		if body != nil {
			emit(s.id, body)
		}
		if out.Len() > limit {
			return nil, &LimitError{Limit: Growth}
		}
	}
	return out.Bytes(), nil
}

// rewriter carries the index arithmetic of one rewrite.
type rewriter struct {
	oldFuncImports uint32 // function indices from here up move up by added()
	funcs          uint32 // the module's own function count, imports included
	globals        uint32 // the module's own global count, imports included
	types          uint32 // the module's own type count
	params         []uint32
	funcTypes      []uint32
	hooked         []hooked
	replaced       map[uint32][]byte // Options.Replace's bodies, by defined function
	opts           Options
	// room is how long the section being rewritten may grow before the
	// metered module is past its limit: the code section is refused as it
	// grows past it, not once it is whole.
	room int

	buf    []byte // a body's code as it is rewritten
	blocks int    // the block, loop and if instructions of that body so far
}

// fuel is the new global's index: the first after the module's own.
func (rw *rewriter) fuel() uint32 { return rw.globals }

// refuel is the first new import's function index: the first after the
// module's own imported functions, which is why the others move up. The
// hooks follow it.
func (rw *rewriter) refuel() uint32 { return rw.oldFuncImports }

func (rw *rewriter) hook(i int) uint32 { return rw.oldFuncImports + 1 + uint32(i) }

// added is how many functions the rewrite imports.
func (rw *rewriter) added() uint32 { return 1 + uint32(len(rw.hooked)) }

// wrapper is the function index of the i-th hooked import's wrapper:
// after the module's own functions.
func (rw *rewriter) wrapper(i int) uint32 { return rw.funcs + rw.added() + uint32(i) }

// fn maps a function index of the module to the rewritten one, refusing
// one the module does not have: a hooked import's uses go to its wrapper.
func (rw *rewriter) fn(idx uint32) (uint32, error) {
	for i, s := range rw.hooked {
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
		w = leb128.AppendUint32(w, n+2)
		w = append(w, r.rest()...)
		w = append(w, 0x60, 0x00, 0x01, 0x7F) // type rw.types: () -> i32, refuel's
		w = append(w, 0x60)                   // type rw.types+1: the hooks'
		w = append(w, hookSig...)
	case secImport:
		n := r.u32()
		w = leb128.AppendUint32(w, n+rw.added())
		w = append(w, r.rest()...)
		w = appendName(w, ImportModule)
		w = appendName(w, Refuel)
		w = append(w, 0x00)
		w = leb128.AppendUint32(w, rw.types)
		for _, s := range rw.hooked {
			w = appendName(w, ImportModule)
			w = appendName(w, s.hook)
			w = append(w, 0x00)
			w = leb128.AppendUint32(w, rw.types+1)
		}
	case secFunction:
		n := r.u32()
		w = leb128.AppendUint32(w, n+uint32(len(rw.hooked)))
		w = append(w, r.rest()...)
		for _, s := range rw.hooked {
			w = leb128.AppendUint32(w, s.typ)
		}
	case secGlobal:
		n := r.u32()
		w = leb128.AppendUint32(w, n+1)
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
		w = append(w, 0x7F, 0x01, 0x41) // mutable i32, i32.const FuelPerRefuel
		w = leb128.AppendInt32(w, FuelPerRefuel)
		w = append(w, 0x0B)
	case secExport:
		n := r.u32()
		w = leb128.AppendUint32(w, n)
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
			w = leb128.AppendUint32(w, idx)
		}
	case secStart:
		idx, err := rw.fn(r.u32())
		if err != nil {
			return nil, err
		}
		w = leb128.AppendUint32(w, idx)
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
			w = leb128.AppendUint32(w, sub)
			w = append(w, r.bytes(16)...)
		case 0x23: // global.get
			idx := r.u32()
			if err := rw.global(idx); err != nil {
				return nil, err
			}
			w = leb128.AppendUint32(w, idx)
		case 0xD0: // ref.null
			w = append(w, r.byte())
		case 0xD2: // ref.func
			idx, err := rw.fn(r.u32())
			if err != nil {
				return nil, err
			}
			w = leb128.AppendUint32(w, idx)
		default:
			return nil, fmt.Errorf("constant expression: opcode %#x", op)
		}
	}
	return nil, r.err
}

// elements copies the element section, mapping the function indices.
func (rw *rewriter) elements(r *reader) ([]byte, error) {
	n := r.u32()
	w := leb128.AppendUint32(nil, n)
	var err error
	for i := uint32(0); i < n && r.err == nil && err == nil; i++ {
		flags := r.u32()
		w = leb128.AppendUint32(w, flags)
		if flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		if flags&2 != 0 && flags&1 == 0 { // an explicit table index
			w = leb128.AppendUint32(w, r.u32())
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
		w = leb128.AppendUint32(w, count)
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
			w = leb128.AppendUint32(w, idx)
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
			w = leb128.AppendUint32(w, uint32(len(sub.b)))
			w = append(w, sub.b...)
			continue
		}
		var sw []byte
		n := sub.u32()
		sw = leb128.AppendUint32(sw, n)
		for i := uint32(0); i < n && sub.err == nil; i++ {
			idx, err := rw.shifted(sub.u32())
			if err != nil {
				return nil
			}
			sw = leb128.AppendUint32(sw, idx)
			if id == 1 {
				sw = appendName(sw, sub.name())
				continue
			}
			m := sub.u32() // an inner name map: index, name
			sw = leb128.AppendUint32(sw, m)
			for j := uint32(0); j < m && sub.err == nil; j++ {
				sw = leb128.AppendUint32(sw, sub.u32())
				sw = appendName(sw, sub.name())
			}
		}
		if sub.err != nil || sub.pos != len(sub.b) {
			return nil
		}
		w = append(w, id)
		w = leb128.AppendUint32(w, uint32(len(sw)))
		w = append(w, sw...)
	}
	if r.err != nil {
		return nil
	}
	return w
}

// code rewrites every function body, and adds the wrappers'.
func (rw *rewriter) code(r *reader) ([]byte, error) {
	n := r.u32()
	w := leb128.AppendUint32(nil, n+uint32(len(rw.hooked)))
	var body []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		b := &reader{b: r.bytes(r.u32())}
		if r.err != nil {
			break
		}
		fn := rw.oldFuncImports + i
		if body, ok := rw.replaced[i]; ok {
			b = &reader{b: body}
		}
		if i >= uint32(len(rw.funcTypes)) || rw.funcTypes[i] >= uint32(len(rw.params)) {
			return nil, fmt.Errorf("function %d: no type", fn)
		}
		if max := rw.opts.MaxFunctionBytes; max > 0 && len(b.b) > max {
			return nil, &LimitError{Limit: FunctionBytes, Max: int64(max), Size: int64(len(b.b)), Function: int64(fn)}
		}
		var err error
		body, err = rw.body(b, body[:0], rw.params[rw.funcTypes[i]], rw.room-len(w))
		var le *LimitError
		if errors.As(err, &le) {
			if le.Limit != Growth {
				le.Function = int64(fn)
			}
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("function %d: %v", fn, err)
		}
		w = leb128.AppendUint32(w, uint32(len(body)))
		w = append(w, body...)
		if len(w) > rw.room {
			return nil, &LimitError{Limit: Growth}
		}
	}
	for i, s := range rw.hooked {
		body = rw.wrapperBody(body[:0], s, i)
		w = leb128.AppendUint32(w, uint32(len(body)))
		w = append(w, body...)
	}
	return w, r.err
}

// wrapperBody is the i-th wrapper, of s: hook(a, b, import(a, b)). It has no
// check, as it has neither loop nor call back into the guest.
func (rw *rewriter) wrapperBody(w []byte, s hooked, i int) []byte {
	w = append(w, 0x00)                               // no locals
	w = append(w, 0x20, 0, 0x20, 1, 0x20, 0, 0x20, 1) // local.get 0, 1, 0, 1
	w = append(w, 0x10)                               // call the import: its index is below the shift
	w = leb128.AppendUint32(w, s.fn)
	w = append(w, 0x10)
	w = leb128.AppendUint32(w, rw.hook(i))
	return append(w, 0x0B)
}

// check is the inserted check: fuel = fuel - 1; if fuel <= 0 { fuel = refuel() }.
func (rw *rewriter) check(w []byte) []byte {
	w = append(w, 0x23)
	w = leb128.AppendUint32(w, rw.fuel())
	w = append(w, 0x41, 0x01, 0x6B, 0x24) // i32.const 1, i32.sub, global.set
	w = leb128.AppendUint32(w, rw.fuel())
	w = append(w, 0x23)
	w = leb128.AppendUint32(w, rw.fuel())
	w = append(w, 0x41, 0x00, 0x4C, 0x04, 0x40, 0x10) // i32.const 0, i32.le_s, if, call
	w = leb128.AppendUint32(w, rw.refuel())
	w = append(w, 0x24) // global.set
	w = leb128.AppendUint32(w, rw.fuel())
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
		w = leb128.AppendUint32(w, decls+1)
		w = append(w, r.b[declsStart:declsEnd]...)
		w = append(w, 0x01, 0x7F) // one i32: the scratch local
	}
	return append(w, code...), nil
}

// instructions rewrites the code of a body whose scratch local would be
// the one numbered scratch, and says whether it used that local. It
// refuses a body with more blocks than rw.opts allows, and one whose
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
			if err := rw.block(LoopWeight); err != nil {
				return nil, false, err
			}
			w = rw.check(w)
			since = 0
			if len(w) > room {
				return nil, false, &LimitError{Limit: Growth}
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
			w = leb128.AppendUint32(w, r.u32())
		case op == 0x0E: // br_table
			n := r.u32()
			w = leb128.AppendUint32(w, n)
			for i := uint32(0); i <= n && r.err == nil; i++ {
				w = leb128.AppendUint32(w, r.u32())
			}
		case op == 0x10 || op == 0xD2: // call, ref.func
			idx, err := rw.fn(r.u32())
			if err != nil {
				return nil, false, err
			}
			w = leb128.AppendUint32(w, idx)
		case op == 0x11: // call_indirect
			w = leb128.AppendUint32(w, r.u32())
			w = leb128.AppendUint32(w, r.u32())
		case op == 0x1C: // select with types
			n := r.u32()
			w = leb128.AppendUint32(w, n)
			w = append(w, r.bytes(n)...)
		case op >= 0x20 && op <= 0x22, op == 0x25, op == 0x26: // locals, table.get/set
			w = leb128.AppendUint32(w, r.u32())
		case op == 0x23 || op == 0x24: // global.get/set
			idx := r.u32()
			if err := rw.global(idx); err != nil {
				return nil, false, err
			}
			w = leb128.AppendUint32(w, idx)
		case op >= 0x28 && op <= 0x3E: // loads and stores: memarg
			w = leb128.AppendUint32(w, r.u32())
			w = leb128.AppendUint32(w, r.u32())
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			w = leb128.AppendUint32(w, r.u32())
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
		if since >= CheckEvery {
			w = rw.check(w)
			since = 0
		}
	}
	if r.err != nil {
		return nil, false, r.err
	}
	return nil, false, errors.New("no end")
}

// block counts a block or if (weight 1) or a loop (LoopWeight) in the
// body, refusing one past rw.opts.blocks.
func (rw *rewriter) block(weight int) error {
	rw.blocks += weight
	if max := rw.opts.MaxBlocks; max > 0 && rw.blocks > max {
		return &LimitError{Limit: Blocks, Max: int64(max), Size: int64(rw.blocks)}
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
		imm = leb128.AppendUint32(imm, r.u32())
		imm = leb128.AppendUint32(imm, r.u32())
		charge = true
	case sub == 9 || sub == 13 || sub == 16: // data.drop, elem.drop, table.size
		imm = leb128.AppendUint32(imm, r.u32())
	case sub == 11 || sub == 15 || sub == 17: // memory.fill, table.grow, table.fill
		imm = leb128.AppendUint32(imm, r.u32())
		charge = true
	default:
		return nil, false, fmt.Errorf("opcode 0xfc %d is not supported", sub)
	}
	if charge {
		w = append(w, 0x22) // local.tee
		w = leb128.AppendUint32(w, scratch)
	}
	w = append(w, 0xFC)
	w = leb128.AppendUint32(w, sub)
	w = append(w, imm...)
	if charge {
		w = append(w, 0x23) // global.get
		w = leb128.AppendUint32(w, rw.fuel())
		w = append(w, 0x20) // local.get
		w = leb128.AppendUint32(w, scratch)
		w = append(w, 0x41, 10, 0x76, 0x6B, 0x24) // i32.const 10, i32.shr_u, i32.sub, global.set
		w = leb128.AppendUint32(w, rw.fuel())
	}
	return w, charge, r.err
}

// simd copies a 0xFD instruction's immediates.
func simd(r *reader, w []byte) ([]byte, error) {
	sub := r.u32()
	w = leb128.AppendUint32(w, sub)
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores: memarg
		w = leb128.AppendUint32(w, r.u32())
		w = leb128.AppendUint32(w, r.u32())
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		w = append(w, r.bytes(16)...)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		w = append(w, r.byte())
	case sub >= 84 && sub <= 91: // load_lane, store_lane: memarg, lane
		w = leb128.AppendUint32(w, r.u32())
		w = leb128.AppendUint32(w, r.u32())
		w = append(w, r.byte())
	case sub <= 255:
		// no immediates
	default:
		return nil, fmt.Errorf("opcode 0xfd %d is not supported", sub)
	}
	return w, r.err
}
