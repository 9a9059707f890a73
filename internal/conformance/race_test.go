//go:build race

package conformance

// raceEnabled shrinks what is inherently slow under the race detector
// (encoding and decoding a many-MiB line), never what is tested.
const raceEnabled = true
