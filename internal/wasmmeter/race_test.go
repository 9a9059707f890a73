//go:build race

package wasmmeter

// raceCost scales what the tests wait for: wazero's compiler, instrumented
// by the race detector, takes ten times as long.
const raceCost = 10
