// Package wasmtest builds small WebAssembly modules by hand, for tests of
// the meter and of the sandbox that runs what it makes.
package wasmtest

import (
	"bytes"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/leb128"
)

// Value types, the end instruction, and the section ids the tests use.
const (
	I32 = 0x7F
	I64 = 0x7E
	End = 0x0B

	SecCustom   = 0
	SecType     = 1
	SecImport   = 2
	SecFunction = 3
	SecMemory   = 5
	SecGlobal   = 6
	SecExport   = 7
	SecCode     = 10
)

// U32 and S32 append v as an unsigned and a signed LEB128 number.
var (
	U32 = leb128.AppendUint32
	S32 = leb128.AppendInt32
)

// Name appends s as a name: its length, then its bytes.
func Name(w []byte, s string) []byte { return append(U32(w, uint32(len(s))), s...) }

// Vec is a vector: the count of entries, then each.
func Vec(entries ...[]byte) []byte {
	b := U32(nil, uint32(len(entries)))
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// Sect is a section: its id, its size and its body.
func Sect(id byte, body []byte) []byte { return append(U32([]byte{id}, uint32(len(body))), body...) }

// Cat joins parts.
func Cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// FuncType is the function type params → results.
func FuncType(params, results []byte) []byte {
	return Cat([]byte{0x60}, U32(nil, uint32(len(params))), params, U32(nil, uint32(len(results))), results)
}

// Body is a function body: its local declarations and its code, End
// added.
func Body(locals []byte, code ...byte) []byte {
	b := Cat(locals, code, []byte{End})
	return append(U32(nil, uint32(len(b))), b...)
}

// Header is what every module begins with: the magic and version 1.
var Header = []byte("\x00asm\x01\x00\x00\x00")

// Command is a WASI command: types 0 () → (), 1 (i32) → (), 2 (i32) →
// (i32); function 0 the import wasi_snapshot_preview1.proc_exit (type 1);
// functions of funcTypes from 1 on, the first exported as _start, with
// bodies; one page of memory exported as "memory"; and extra sections (a
// name section, say) at the end.
func Command(funcTypes []byte, bodies [][]byte, extra ...[]byte) []byte {
	return command(nil, nil, funcTypes, bodies, extra...)
}

// GoCommand is Command as the Go linker would write it, as far as the
// meter can tell: a go:buildid custom section first, and global 0 of
// type global (a value type and 1 for mutable, 0 for not: Go's stack
// pointer is []byte{I32, 1}), initially 0.
func GoCommand(global []byte, funcTypes []byte, bodies [][]byte, extra ...[]byte) []byte {
	init := []byte{0x41, 0, End} // i32.const 0
	if global[0] == I64 {
		init[0] = 0x42
	}
	return command(Sect(SecCustom, Name(Name(nil, "go:buildid"), "test")), Sect(SecGlobal, Vec(Cat(global, init))), funcTypes, bodies, extra...)
}

// command is Command with the custom section first after the header and
// the global section in their places.
func command(first, globals, funcTypes []byte, bodies [][]byte, extra ...[]byte) []byte {
	var fns [][]byte
	for _, t := range funcTypes {
		fns = append(fns, []byte{t})
	}
	return Cat(Header, first,
		Sect(SecType, Vec(FuncType(nil, nil), FuncType([]byte{I32}, nil), FuncType([]byte{I32}, []byte{I32}))),
		Sect(SecImport, Vec(Cat(Name(nil, "wasi_snapshot_preview1"), Name(nil, "proc_exit"), []byte{0, 1}))),
		Sect(SecFunction, Vec(fns...)),
		Sect(SecMemory, Vec([]byte{0, 1})), // min 1 page
		globals,
		Sect(SecExport, Vec(Cat(Name(nil, "_start"), []byte{0, 1}), Cat(Name(nil, "memory"), []byte{2, 0}))),
		Sect(SecCode, Vec(bodies...)),
		Cat(extra...),
	)
}

// StdioCommand is a WASI command whose _start is code (End added), with
// these imports: 0 proc_exit, 1 fd_fdstat_get, 2 fd_fdstat_set_flags,
// 3 fd_read; one page of memory.
func StdioCommand(code ...[]byte) []byte {
	imp := func(name string, typ byte) []byte {
		return Cat(Name(nil, "wasi_snapshot_preview1"), Name(nil, name), []byte{0, typ})
	}
	return Cat(Header,
		Sect(SecType, Vec(FuncType(nil, nil), FuncType([]byte{I32}, nil),
			FuncType([]byte{I32, I32}, []byte{I32}), FuncType([]byte{I32, I32, I32, I32}, []byte{I32}))),
		Sect(SecImport, Vec(imp("proc_exit", 1), imp("fd_fdstat_get", 2), imp("fd_fdstat_set_flags", 2), imp("fd_read", 3))),
		Sect(SecFunction, Vec([]byte{0})),
		Sect(SecMemory, Vec([]byte{0, 1})),
		Sect(SecExport, Vec(Cat(Name(nil, "_start"), []byte{0, 4}), Cat(Name(nil, "memory"), []byte{2, 0}))),
		Sect(SecCode, Vec(Body(Vec(), Cat(code...)...))),
	)
}
