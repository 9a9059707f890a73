package wasm

import "github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/wasmtest"

// The tests build small modules by hand (package wasmtest): each made by
// command is a WASI command importing proc_exit (function 0), whose
// _start is function 1, with one page of memory exported as "memory".
const (
	i32 = wasmtest.I32
	i64 = wasmtest.I64
	end = wasmtest.End
)

var (
	vec          = wasmtest.Vec
	sect         = wasmtest.Sect
	cat          = wasmtest.Cat
	fnBody       = wasmtest.Body
	command      = wasmtest.Command
	stdioCommand = wasmtest.StdioCommand
	appendName   = wasmtest.Name
	appendU32    = wasmtest.U32
)
