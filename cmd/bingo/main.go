// Command bingo is the agent host's command line: it loads the person's
// plugins (exec and wasm), runs a command, a tool call or a turn through
// them, and shows the answer. See internal/cli for the surface.
package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/bingo/bingo-plugin-rpc/internal/cli"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

func main() {
	// The hidden mode first: a child that compiles one wasm module for
	// the bingo that started it, under that bingo's bounds.
	if len(os.Args) > 1 && os.Args[1] == wasm.CompileChildArg {
		os.Exit(wasm.CompileChild(os.Args[2:], os.Stdin, os.Stderr))
	}
	startingHeap()
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// startingGC is the GC percentage until the first collection: the
// runtime's 4 MiB minimum heap times four. Most bingo runs are short
// (plugins, complete, call) and their start-up heap (the packages' own
// init, settings, manifests, the declaration cache) sits just below the
// runtime's first goal: with a score of plugins installed one collection
// in a few crossed it, costing more CPU than keying every plugin, on the
// cores the plugins were being keyed on. Go's own compiler starts the same
// way (cmd/compile's AdjustStartingHeap).
const startingGC = 400

// startingHeap raises the GC percentage until the first collection, which
// puts it back: a run that grows past 16 MiB (a turn, wasm compilation) is
// collected as usual from then on. A person's own GOGC or GOMEMLIMIT is
// left alone.
func startingHeap() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	was := debug.SetGCPercent(startingGC)
	sentinel := new([16]byte) // not a tiny allocation: it has its own cleanup
	runtime.AddCleanup(sentinel, func(was int) { debug.SetGCPercent(was) }, was)
}
