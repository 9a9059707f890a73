//go:build !linux

package wasm

import "time"

// procStat reports nothing outside Linux: there the compile child is
// bounded by wall time instead of CPU time, and its memory only by the
// limit it sets its own collector (CompileChild).
func procStat(int) (cpu time.Duration, rss int64, ok bool) { return 0, 0, false }
