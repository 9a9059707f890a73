//go:build race

package wasm

// raceCost scales the default compile time and memory: wazero's
// compiler, instrumented by the race detector, takes ten times as long
// and several times the memory.
const raceCost = 10
