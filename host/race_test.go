//go:build race

package host

// raceEnabled shrinks what is only slow under the race detector, never a
// bound that is tested.
const raceEnabled = true
