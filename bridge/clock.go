package bridge

import (
	"sync/atomic"
	"time"
)

// clock is one request's timer. It guards the request's write, as
// guardWrite guards any other (a write still blocked after the deadline,
// but never less than Grace, means the plugin is not reading its input),
// and it closes due at the request's deadline, which ends the wait for
// its answer. One timer does both: a timer for each and a context for the
// deadline cost every call several allocations, and two timers armed and
// stopped, on its way to the plugin and back.
type clock struct {
	inst    *instance
	what    string
	bound   time.Duration // the write's: max(deadline, Grace) from wrote
	wrote   time.Time     // when the write began
	writing atomic.Bool   // the write has not returned
	due     chan struct{} // closed at the deadline
	t       *time.Timer
	passed  bool // due is closed; the timer's own
}

// startClock starts the clock of a request about to be written, whose
// deadline counts from start.
func (inst *instance) startClock(deadline time.Duration, start time.Time, what string) *clock {
	c := &clock{inst: inst, what: what, bound: inst.writeBound(deadline), wrote: time.Now(), due: make(chan struct{})}
	c.writing.Store(true)
	// Armed after c.t is set: tick may Reset it.
	c.t = time.AfterFunc(time.Hour, c.tick)
	c.t.Reset(max(deadline-c.wrote.Sub(start), 0))
	return c
}

// written records that the write has returned.
func (c *clock) written() { c.writing.Store(false) }

// stop ends the clock: the request has its answer, or no longer waits.
func (c *clock) stop() { c.t.Stop() }

// tick runs at the deadline, and again at the write's bound if the write
// is still blocked then.
func (c *clock) tick() {
	if !c.passed {
		c.passed = true
		close(c.due)
		c.inst.stream.interrupt() // a caller may be reading (waiter.await)
	}
	if !c.writing.Load() {
		return
	}
	if left := c.bound - time.Since(c.wrote); left > 0 {
		c.t.Reset(left)
		return
	}
	c.inst.writeBlocked(c.what, c.bound)
}
