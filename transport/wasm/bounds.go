package wasm

import (
	"errors"
	"fmt"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
)

// Bounds cap what compiling one module may cost the host (see the package
// doc, "Bounds"). A zero field takes its default from DefaultBounds.
type Bounds struct {
	// ModuleMiB caps the module file's size.
	ModuleMiB int
	// FunctionKiB caps one function body's size.
	FunctionKiB int
	// BlocksPerFunction caps the block, loop and if instructions of one
	// function, a loop counting wasmmeter.LoopWeight: wazero's compile
	// time grows with their square.
	BlocksPerFunction int
	// CompileTime bounds the compilation of a module the Host has not
	// compiled before, which runs in a child process that is killed when
	// it runs out: its CPU time on Linux (where the wall time may be
	// wallFactor times as long), its wall time elsewhere.
	CompileTime time.Duration
	// CompileWall bounds the child's wall time where CompileTime is CPU
	// time; 0 means wallFactor times CompileTime. A caller that must not
	// wait long whatever the machine is doing (the bingo host, for an
	// untrusted project's module) sets it.
	CompileWall time.Duration
	// CompileMemoryMiB bounds that child's resident memory.
	CompileMemoryMiB int
	// Key is the settings object whose keys raise these bounds: a refusal
	// names Key.<bound> ("wasmCompile.functionKiB"). "" names none.
	Key string
}

// The bounds' names, as a refusal names them after Bounds.Key.
const (
	BoundModuleMiB   = "moduleMiB"
	BoundFunctionKiB = "functionKiB"
	BoundBlocks      = "blocksPerFunction"
	BoundTime        = "time"
	BoundMemory      = "memoryMiB"
)

// DefaultBounds are the bounds a zero Bounds field takes, chosen so that
// compiling any module they admit stays well within what a person waits
// for and a small machine holds (docs/design-notes/wasm-compile-bounds.md
// has the measurements).
func DefaultBounds() Bounds {
	return Bounds{
		ModuleMiB:         32,
		FunctionKiB:       256,
		BlocksPerFunction: 4096,
		CompileTime:       20 * time.Second,
		// A 14 MiB Go module (the go-sdk MCP example) peaks near 290 MiB;
		// 448 keeps bingo plugins within its 500 MiB budget.
		CompileMemoryMiB: 448,
	}
}

// withDefaults fills b's zero fields from DefaultBounds, the compile
// bounds scaled by raceCost in a binary built with the race detector.
func (b Bounds) withDefaults() Bounds {
	d := DefaultBounds()
	d.CompileTime *= raceCost
	d.CompileMemoryMiB *= raceCost
	if b.ModuleMiB <= 0 {
		b.ModuleMiB = d.ModuleMiB
	}
	if b.FunctionKiB <= 0 {
		b.FunctionKiB = d.FunctionKiB
	}
	if b.BlocksPerFunction <= 0 {
		b.BlocksPerFunction = d.BlocksPerFunction
	}
	if b.CompileTime <= 0 {
		b.CompileTime = d.CompileTime
	}
	if b.CompileMemoryMiB <= 0 {
		b.CompileMemoryMiB = d.CompileMemoryMiB
	}
	return b
}

// funcCaps are the bounds the meter holds each function to.
func (b Bounds) funcCaps() wasmmeter.Options {
	return wasmmeter.Options{MaxFunctionBytes: b.FunctionKiB << 10, MaxBlocks: b.BlocksPerFunction}
}

// BoundError is a module refused for one of its Host's bounds: the
// file's size, a function's, its blocks, or what compiling it took. Its
// message says which and, with a Key, the setting that raises it.
type BoundError struct {
	// Bound is the bound's name (BoundModuleMiB, …); "" for the meter's
	// own limit on growth, which no setting raises.
	Bound string
	// Limit and Size are the bound and what the module needed, in the
	// bound's unit for sizes and counts (bytes for sizes). For the time
	// bound Size is 0 when the CPU time ran out, and the wall time the
	// child had (CompileWall) when that ran out instead.
	Limit, Size int64
	// Function is the function's index, for a function's bound.
	Function int64
	// Remembered says the compile bound failed in an earlier run and was
	// not tried again.
	Remembered bool
	// Key is the settings object of Bounds.Key.
	Key string
}

func (e *BoundError) Error() string {
	var msg string
	switch e.Bound {
	case BoundModuleMiB:
		msg = fmt.Sprintf("the module is %d MiB, over the bound of %d MiB on a module", ceilDiv(e.Size, 1<<20), e.Limit>>20)
	case BoundFunctionKiB:
		msg = fmt.Sprintf("function %d is %d KiB, over the bound of %d KiB on a function", e.Function, ceilDiv(e.Size, 1<<10), e.Limit>>10)
	case BoundBlocks:
		msg = fmt.Sprintf("function %d has more than %d blocks, loops and ifs, the bound on a function", e.Function, e.Limit)
	case BoundTime:
		if e.Size > 0 {
			msg = fmt.Sprintf("compiling it took longer than %s of wall time, before its bound of %s of CPU ran out: the machine is busy, or the module slow to compile",
				time.Duration(e.Size), time.Duration(e.Limit))
		} else {
			msg = fmt.Sprintf("compiling it took longer than the bound of %s", time.Duration(e.Limit))
		}
	case BoundMemory:
		msg = fmt.Sprintf("compiling it needed more than the bound of %d MiB of memory", e.Limit>>20)
	default:
		return "metered, it would be more than twice its size (a loop every few bytes): not a module the sandbox runs"
	}
	if e.Remembered {
		msg += " (in an earlier run; it is not tried again under the same bounds)"
	}
	if e.Key != "" {
		msg += fmt.Sprintf("; the setting %s.%s raises it for trusted plugins", e.Key, e.Bound)
	}
	return msg
}

// withKey is err with its *BoundError, if it has one, naming b.Key: a
// compilation is shared by every Transport of one module, and each names
// its own settings. The error is copied, never changed.
func withKey(err error, b Bounds) error {
	var be *BoundError
	if !errors.As(err, &be) || be.Key == b.Key {
		return err
	}
	keyed := *be
	keyed.Key = b.Key
	return &keyed
}

// limitBound is the meter's refusal e as the Bound it is for: the meter's
// own limit on growth (Bound "") for wasmmeter.Growth.
func limitBound(e *wasmmeter.LimitError) *BoundError {
	switch e.Limit {
	case wasmmeter.FunctionBytes:
		return &BoundError{Bound: BoundFunctionKiB, Limit: e.Max, Size: e.Size, Function: e.Function}
	case wasmmeter.Blocks:
		return &BoundError{Bound: BoundBlocks, Limit: e.Max, Size: e.Size, Function: e.Function}
	}
	return &BoundError{}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
