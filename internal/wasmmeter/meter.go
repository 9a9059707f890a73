package wasmmeter

import (
	"errors"
	"fmt"
)

const (
	// ImportModule is the module a metered module imports Refuel, and
	// every Hook's After, from.
	ImportModule = "bingo_sandbox"
	// Refuel is the name of the function of type () → i32 that a metered
	// module calls when its fuel runs out: it returns the new fuel
	// (FuelPerRefuel), or ends the guest.
	Refuel = "refuel"
	// FuelPerRefuel is the fuel a metered module starts with, and what
	// Refuel should return: how many checks pass between two calls of it.
	// A call out of wasm costs about what a hundred checks do, and a
	// thousand checks of a spinning loop take a few microseconds.
	FuelPerRefuel = 1000
	// CheckEvery bounds the instructions run between two checks.
	CheckEvery = 1000
	// LoopWeight is what a loop counts for against Options.MaxBlocks: its
	// check adds an if and a call, and wazero's compile time of a function
	// of metered loops grows as that of four times as many blocks does.
	LoopWeight = 4
)

// Options are the caps Meter holds each function body to, a zero field
// being no cap, and the imports it routes through hooks.
type Options struct {
	MaxFunctionBytes int // a body's size, its local declarations included
	MaxBlocks        int // its block and if instructions, and loops (LoopWeight each)
	Hooks            []Hook
	Replace          []Replacement
}

// Replacement gives a function of the module, found by its name in the
// module's name section, Body instead of its own, metered as any other.
// A function whose type is not Params → Results keeps its own body, as
// does every function of a module without a name section, and of a module
// the Go linker did not write (one without a go:buildid custom section) or
// whose global 0, Go's stack pointer, is not a mutable i32: replacements
// are for the Go runtime's functions, and a module of another toolchain
// may use the same name for something else.
type Replacement struct {
	Name            string
	Params, Results []byte // value types
	Body            []byte // local declarations and code, ending in end
}

// Hook routes every use of one imported function of type (i32, i32) → i32
// through a function the rewrite adds, which calls the import and then
// After, a function of ImportModule of type (i32, i32, i32) → i32, with the
// import's arguments and its result, and returns what After returns. An
// import of another type is left as it is.
type Hook struct {
	Module, Name string // the import
	After        string
}

// Limit names the bound a LimitError is for.
type Limit int

const (
	// Growth: the metered module would be over MaxSize of the original.
	Growth Limit = iota
	// FunctionBytes: a body is over Options.MaxFunctionBytes.
	FunctionBytes
	// Blocks: a body has more than Options.MaxBlocks.
	Blocks
)

// LimitError is a module refused for a Limit: Max is the bound and Size
// what the module needed (for Blocks, the count when it passed Max); for
// a function's limit, Function is its index.
type LimitError struct {
	Limit     Limit
	Max, Size int64
	Function  int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case FunctionBytes:
		return fmt.Sprintf("function %d is %d bytes, over the cap of %d", e.Function, e.Size, e.Max)
	case Blocks:
		return fmt.Sprintf("function %d has more than %d blocks, loops and ifs", e.Function, e.Max)
	}
	return fmt.Sprintf("metered, the module would be over %d bytes, twice its size and %d more", e.Max, slack)
}

// MaxSize is the largest metered module Meter makes of a module of n
// bytes: twice its size, and slack for the declarations every rewrite
// adds, which a module of a few bytes would otherwise be refused for.
// Past it the module's checks, not its code, would be most of what is
// held and compiled: a loop every few bytes, each given a check of
// nineteen.
func MaxSize(n int) int { return 2*n + slack }

const slack = 1024

// Meter returns bin with the fuel checks inserted and the hooks' imports
// routed through them, or an error: a *LimitError, or one saying what in
// bin could not be decoded or rewritten, and where.
func Meter(bin []byte, o Options) ([]byte, error) {
	m, err := decode(bin, o.Hooks, o.Replace)
	if err != nil {
		return nil, err
	}
	max := MaxSize(len(bin))
	out, err := m.rewrite(o, max)
	var limit *LimitError
	if errors.As(err, &limit) && limit.Limit == Growth {
		limit.Max = int64(max)
	}
	return out, err
}
