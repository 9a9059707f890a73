package wasmmeter

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/leb128"
)

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
	secCount    = 12 // data count
)

type section struct {
	id   byte
	body []byte
}

// module is a module as the meter sees it: its sections, undecoded but
// in order, and what of them the rewrite shifts or extends.
type module struct {
	header   []byte
	sections []section

	types, funcImports, globalImports, funcs, globals uint32

	params    []uint32 // each type's parameter count
	sigs      [][]byte // each type's parameters and results, encoded with the shortest counts
	funcTypes []uint32 // each defined function's type
	bodies    int      // the code section's count; -1 with no code section
	hooked    []hooked // the imports routed through hooks
	goBuild   bool     // a go:buildid custom section: the Go linker wrote it
	global0   [2]byte  // global 0's value type and mutability, zero with no globals
	// replaced holds the bodies given instead of their own to defined
	// functions, by index among the defined functions.
	replaced map[uint32][]byte
}

// hooked is an import the rewrite routes through a function of its own,
// which calls the import and then its hook.
type hooked struct {
	fn   uint32 // the import's function index
	typ  uint32 // its type
	hook string // the hook's name in ImportModule
}

// hookedSig is the type of every hooked import and of its wrapper: (i32,
// i32) → i32. The hooks take the wrapper's parameters and the import's
// result: hookSig, (i32, i32, i32) → i32.
var (
	hookedSig = []byte{0x02, 0x7F, 0x7F, 0x01, 0x7F}
	hookSig   = []byte{0x03, 0x7F, 0x7F, 0x7F, 0x01, 0x7F}
)

// decode splits bin into its sections and reads what the rewrite needs
// of them. As a validating decoder does, it refuses a section out of the
// binary format's order (or twice), one it does not know, a size that
// runs past the module or a section whose declarations do not fill it,
// and a code section whose count is not the function section's: the
// rewrite places the sections it adds by that order, and counts on what
// it was told.
func decode(bin []byte, hooks []Hook, replace []Replacement) (*module, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || !bytes.Equal(bin[4:8], []byte{1, 0, 0, 0}) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	m := &module{header: bin[:8], bodies: -1}
	r := &reader{b: bin, pos: 8}
	last := -1 // the rank of the last section other than a custom one
	for r.pos < len(r.b) {
		at := r.pos
		id := r.byte()
		body := r.bytes(r.u32())
		if r.err != nil {
			return nil, r.err
		}
		if id != secCustom {
			rank := sectionRank(id)
			if rank < 0 {
				return nil, fmt.Errorf("section id %d at byte %d is not one the meter knows", id, at)
			}
			if rank <= last {
				return nil, fmt.Errorf("section %d at byte %d is out of order", id, at)
			}
			last = rank
		}
		m.sections = append(m.sections, section{id, body})
		if err := m.read(id, body, hooks); err != nil {
			return nil, fmt.Errorf("section %d: %v", id, err)
		}
	}
	if bodies := max(m.bodies, 0); uint32(bodies) != m.funcs {
		return nil, fmt.Errorf("%d functions declared, %d bodies", m.funcs, bodies)
	}
	if len(replace) > 0 && m.goBuild && m.global0 == [2]byte{0x7F, 1} {
		m.replace(replace)
	}
	return m, nil
}

// replace finds the functions that replace names, and keeps the body of
// each whose type is the replacement's. decode calls it only for a module
// the Go linker wrote whose global 0 is a mutable i32, Go's stack pointer:
// the names and bodies replaced are the Go runtime's, and a module of
// another toolchain may have a function of the same name and type that
// means something else (in a C module global 0 is the C stack pointer).
func (m *module) replace(replace []Replacement) {
	m.eachName(func(fn uint32, name string) {
		for _, rp := range replace {
			if rp.Name == name && m.typeIs(m.funcTypes[fn], rp.Params, rp.Results) {
				if m.replaced == nil {
					m.replaced = map[uint32][]byte{}
				}
				m.replaced[fn] = rp.Body
			}
		}
	})
}

// eachName calls f with each defined function the name section names:
// its index among the defined functions, and its name. A name section
// that does not parse names nothing after where it breaks: wazero
// ignores one it cannot read, and so does the rewrite (names).
func (m *module) eachName(f func(fn uint32, name string)) {
	for _, s := range m.sections {
		r := &reader{b: s.body}
		if s.id != secCustom || r.name() != "name" {
			continue
		}
		for r.pos < len(r.b) && r.err == nil {
			id := r.byte()
			sub := &reader{b: r.bytes(r.u32())}
			if id != 1 { // function names
				continue
			}
			for n := sub.u32(); n > 0 && sub.err == nil; n-- {
				idx, name := sub.u32(), sub.name()
				if sub.err == nil && idx >= m.funcImports && idx-m.funcImports < m.funcs {
					f(idx-m.funcImports, name)
				}
			}
		}
	}
}

// Named reports whether bin's name section names one of its functions
// name: whether a Replacement of that name can find it. A module that
// does not decode names nothing.
func Named(bin []byte, name string) bool {
	m, err := decode(bin, nil, nil)
	if err != nil {
		return false
	}
	found := false
	m.eachName(func(_ uint32, n string) { found = found || n == name })
	return found
}

// typeIs reports whether type typ is params → results.
func (m *module) typeIs(typ uint32, params, results []byte) bool {
	if typ >= uint32(len(m.sigs)) {
		return false
	}
	sig := leb128.AppendUint32(nil, uint32(len(params)))
	sig = append(sig, params...)
	sig = leb128.AppendUint32(sig, uint32(len(results)))
	return bytes.Equal(m.sigs[typ], append(sig, results...))
}

// sectionRank is a section's place in the order the binary format
// requires (the data count section comes before the code), -1 for an id
// it does not have.
func sectionRank(id byte) int {
	switch {
	case id == secCount:
		return secElement + 1
	case id >= secCode && id < secCount:
		return int(id) + 1
	case id < secCode:
		return int(id)
	}
	return -1
}

// read records what a section declares that the rewrite needs to know.
func (m *module) read(id byte, body []byte, hooks []Hook) error {
	r := &reader{b: body}
	switch id {
	case secCustom:
		m.goBuild = m.goBuild || r.name() == "go:buildid"
		return r.err
	case secType:
		m.types = r.u32()
		for i := uint32(0); i < m.types && r.err == nil; i++ {
			if form := r.byte(); form != 0x60 {
				return fmt.Errorf("type %d is not a function type", i)
			}
			params := r.u32()
			sig := leb128.AppendUint32(nil, params)
			sig = append(sig, r.bytes(params)...)
			results := r.u32()
			sig = leb128.AppendUint32(sig, results)
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
		if m.globalImports == 0 && m.globals > 0 {
			m.global0 = [2]byte{r.byte(), r.byte()}
		}
		return r.err // the rewrite reads the rest
	case secCode:
		m.bodies = int(r.u32())
		return r.err // the rewrite reads the rest
	case secImport:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			module, name := r.name(), r.name()
			switch kind := r.byte(); kind {
			case 0: // func
				typ := r.u32()
				if hook := hookOf(hooks, module, name); hook != "" && typ < uint32(len(m.sigs)) && bytes.Equal(m.sigs[typ], hookedSig) {
					m.hooked = append(m.hooked, hooked{fn: m.funcImports, typ: typ, hook: hook})
				}
				m.funcImports++
			case 1: // table
				r.byte()
				r.limits()
			case 2: // memory
				r.limits()
			case 3: // global
				if t := [2]byte{r.byte(), r.byte()}; m.globalImports == 0 {
					m.global0 = t
				}
				m.globalImports++
			default:
				return fmt.Errorf("import of kind %d", kind)
			}
		}
	default:
		return nil // copied as it is
	}
	if r.err == nil && r.pos != len(r.b) {
		return fmt.Errorf("%d bytes left over", len(r.b)-r.pos)
	}
	return r.err
}

// hookOf is the After of the import module.name's hook, or "".
func hookOf(hooks []Hook, module, name string) string {
	for _, h := range hooks {
		if h.Module == module && h.Name == name {
			return h.After
		}
	}
	return ""
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

func appendName(w []byte, s string) []byte {
	w = leb128.AppendUint32(w, uint32(len(s)))
	return append(w, s...)
}
