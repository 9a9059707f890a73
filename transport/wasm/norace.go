//go:build !race

package wasm

// raceCost scales the default compile time and memory (race.go).
const raceCost = 1
