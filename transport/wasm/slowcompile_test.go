package wasm

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowCompile: a Start that waits longer than SlowCompileAfter for the
// compilation calls Config.SlowCompile once; a Start that finds the module
// compiled does not call it.
func TestSlowCompile(t *testing.T) {
	h := freshHost(t) // no disk cache: the first start compiles
	var calls atomic.Int32
	start := func(after time.Duration) {
		tr := h.Transport(Config{Path: probeWasm, Name: "probe", SlowCompile: func() { calls.Add(1) }, SlowCompileAfter: after})
		t.Helper()
		c, err := tr.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Kill()
		_ = c.Wait()
	}

	start(time.Nanosecond) // any compilation is longer
	for deadline := time.Now().Add(time.Second); calls.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the timer's goroutine may still be running the call
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("cold start: SlowCompile called %d times, want 1", n)
	}

	start(200 * time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a timer left running would fire by now
	if n := calls.Load(); n != 1 {
		t.Fatalf("warm start: SlowCompile called %d more times, want 0", n-1)
	}
}
