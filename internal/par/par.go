// Package par runs the iterations of a loop on a few goroutines at once.
//
// Each runs f(0), …, f(n-1) on at most GOMAXPROCS (at least 2) goroutines
// that each take the next index until none is left, rather than on one
// goroutine an iteration: in a process just started, as bingo is on every
// command, each new goroutine grows its stack from scratch and may wake
// another thread, and with twenty plugins to key that cost more than the
// parallelism won. The work of each iteration should be CPU-bound or brief
// I/O (reading small files); f must be safe to call concurrently.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls f(i) for every i in [0, n), concurrently, and returns when
// every call has returned.
func Each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, max(runtime.GOMAXPROCS(0), 2)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}
