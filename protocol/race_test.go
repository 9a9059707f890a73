//go:build race

package protocol

// raceEnabled: the race detector slows a byte-by-byte scan tenfold and
// more, so a bound on wall time is widened under it.
const raceEnabled = true
