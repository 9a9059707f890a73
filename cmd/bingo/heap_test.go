package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// The raised GC percentage lasts until the first collection, which puts
// back the one there was.
func TestStartingHeapLastsUntilTheFirstCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: startingHeap leaves it alone")
	}
	was := gcPercent()
	defer debug.SetGCPercent(was)
	startingHeap()
	if got := gcPercent(); got != startingGC {
		t.Fatalf("after startingHeap: GOGC %d, want %d", got, startingGC)
	}
	for deadline := time.Now().Add(10 * time.Second); gcPercent() != was; {
		if time.Now().After(deadline) {
			t.Fatalf("after collections: GOGC %d, want %d back", gcPercent(), was)
		}
		runtime.GC() // the cleanup runs on its own goroutine after one
		time.Sleep(10 * time.Millisecond)
	}
}

// A person's own GOGC is theirs.
func TestStartingHeapLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "50")
	was := gcPercent()
	startingHeap()
	if got := gcPercent(); got != was {
		t.Fatalf("with GOGC set: GOGC %d, want %d untouched", got, was)
	}
}

// gcPercent reads the GC percentage in force without setting it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
