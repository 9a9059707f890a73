package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every index is run exactly once, and Each returns only after the last.
func TestEachRunsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 100} {
		var mu sync.Mutex
		seen := make([]int, n)
		Each(n, func(i int) {
			time.Sleep(time.Microsecond)
			mu.Lock()
			seen[i]++
			mu.Unlock()
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
	}
}

// At most GOMAXPROCS (at least 2) calls run at once, and more than one
// does when there is more than one to run.
func TestEachBoundsItsGoroutines(t *testing.T) {
	limit := max(runtime.GOMAXPROCS(0), 2)
	var now, most atomic.Int64
	Each(50, func(int) {
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		now.Add(-1)
	})
	if got := most.Load(); got > int64(limit) || got < 2 {
		t.Fatalf("at most %d at once, want between 2 and %d", got, limit)
	}
}
