// Package wasmmeter rewrites a WebAssembly module so that a guest that
// never calls its host still stops, now and then, to ask it for fuel:
// where a host can end the guest, and where the Go garbage collector can
// stop the goroutine running it.
//
// Meter adds a mutable i32 global, the fuel, and an import, Refuel of
// ImportModule, and inserts a check at every point where a guest can go
// on without end:
//
//	fuel = fuel - 1; if fuel <= 0 { fuel = refuel() }
//
// The points are each function's entry (recursion), each loop's header,
// and every CheckEvery instructions of code that has neither, so that no
// run of wasm code between two checks is longer than CheckEvery
// instructions. A bulk memory or table operation (memory.copy, fill,
// init, table.copy, init, fill, grow), whose cost grows with its count, is
// charged one unit of fuel per 1024 of it, through a local the rewrite
// adds.
//
// The rules the rewrite keeps:
//   - The guest cannot reach the fuel: code naming a global or a function
//     its module does not have is refused (wazero would refuse it
//     unmetered too), so the new global and functions are the inserted
//     code's alone. Every function index past the imports moves up by the
//     functions imported; the name section follows.
//   - Only what wazero accepts by default is understood (WebAssembly 2.0:
//     multi-value, bulk memory, reference types, SIMD, sign extension,
//     saturating conversions). Anything else (tail calls, threads,
//     exceptions, a section it does not know) is refused with where it is.
//   - The module is decoded as a validating decoder would before anything
//     is written: sections in the format's order, each once, each filled
//     exactly by what it declares, and one body per function.
//   - The output is at most MaxSize of the input: twice, and a KiB. Past
//     that a module is refused as it is written (a *LimitError), not
//     after: its checks, not its code, would be what the host holds.
//   - Options cap each function body's size and its blocks, a loop
//     counting LoopWeight: what wazero's compile time grows with.
//   - A Hook routes one import through a small added function that calls
//     it and then a function of the host's, so that the host can amend
//     what the import returned; its uses are all redirected, its index in
//     the name section is not.
//   - A Replacement gives a function found by its name in the name
//     section, and of the replacement's type, the host's body instead of
//     its own; the body is metered as any other. Only a module the Go
//     linker wrote (it has a go:buildid section) whose global 0 is a
//     mutable i32, Go's stack pointer, has a function replaced.
//
// What Meter makes computes what the original does: FuzzMeter runs both
// and compares.
package wasmmeter
