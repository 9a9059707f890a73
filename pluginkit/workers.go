package pluginkit

import (
	"sync"
	"sync/atomic"
	"time"
)

// keptWorkers is how many idle goroutines the workers keep. A request on a
// fresh goroutine grows its stack, copying it, on its way into the
// plugin's code; a kept one has grown it already.
const keptWorkers = 4

// job is work the reader found: a request (call), an observation.
type job interface{ work() }

// workers serve an instance on a few long-lived goroutines, taking turns as
// the reader. The reader reads lines until one makes a job, and runs the
// job itself, on the goroutine that read it, with no switch before its
// answer. Before it does, it puts the reader's role on offer and arms the
// relief: a timer, due at once, whose tick lets an idle worker (one is
// started if none is idle) claim the role. So while the job runs, another
// worker reads on: a slow tool never holds up a cancel, an answer it waits
// for, or another request, and every request has a goroutine of its own.
// A worker done with its job claims the role back if no one has; if one
// has, it waits for its next turn, and past keptWorkers idle workers it
// ends.
//
// A job that finishes before the relief ticks claims the role back and
// reads on itself. In a wasm guest that is the usual case, and it is the
// point: the guest has one thread, timers run only when the running
// goroutine blocks, and a goroutine switch there unwinds and rewinds the
// whole stack (tens of µs a switch). A job that never blocks is
// relieved by no one and costs no switch; one that blocks (a slow tool, an
// Ask waiting for its answer) is relieved as soon as it does. Natively the
// timer ticks on another thread within microseconds, as the hand-over
// always did.
type workers struct {
	next func() job // the reader's work: the next job, or nil once reading has ended

	relief timer            // due while the reader runs a job; its tick offers an idle worker the reader's role
	tick   <-chan time.Time // relief's ticks
	open   atomic.Bool      // the reader's role is on offer: its holder is running a job
	quit   chan struct{}
	idle   atomic.Int32   // workers waiting for the relief, and workers started to
	jobs   sync.WaitGroup // every job found and not yet done: Add under the server's lock
	wg     sync.WaitGroup // every worker
}

// timer is the relief: a *time.Timer, which a test replaces.
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

func newWorkers(next func() job) *workers {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &workers{next: next, relief: t, tick: t.C, quit: make(chan struct{})}
}

// start makes the first worker the reader.
func (c *workers) start() { c.wg.Go(c.worker) }

// worker reads until it finds a job, runs it, and reads on unless another
// worker took the reader's role meanwhile; then it waits for its next turn.
func (c *workers) worker() {
	for {
		j := c.next()
		if j == nil {
			return // reading has ended
		}
		c.offer()
		j.work()
		c.jobs.Done()
		if c.claim() {
			c.relief.Stop() // its tick, if one is on its way, finds nothing on offer
			continue
		}
		if !c.await() {
			return
		}
	}
}

// offer puts the reader's role on offer while the reader runs a job: the
// relief is due at once, and some worker waits for it.
func (c *workers) offer() {
	c.open.Store(true)
	if c.idle.Load() == 0 {
		c.idle.Add(1) // counted before it starts, so a second job does not start another
		c.wg.Go(c.relieve)
	}
	c.relief.Reset(0)
}

// claim takes the reader's role if it is on offer. Whoever claims it
// reads next: the worker whose relief is due, or the worker done with its
// job (which may be another's than the one that offered it: the offer is
// of the role, and one claim takes it). One Swap decides, which is what
// makes the reader one goroutine; it is also the hand-over's
// happens-before edge, from the last read to the next.
func (c *workers) claim() bool { return c.open.Swap(false) }

// relieve is a worker started idle.
func (c *workers) relieve() {
	if c.wait() {
		c.worker()
	}
}

// await waits for the reader's role, reporting false if the worker
// should end instead: the workers are stopping, or enough are idle.
func (c *workers) await() bool {
	if c.idle.Add(1) > keptWorkers {
		c.idle.Add(-1)
		return false
	}
	return c.wait()
}

// wait is an idle worker's wait for the role, already counted in idle. A
// tick that finds the role claimed already is let go.
func (c *workers) wait() bool {
	defer c.idle.Add(-1)
	for {
		select {
		case <-c.tick:
			if c.claim() {
				return true
			}
		case <-c.quit:
			return false
		}
	}
}

// stop ends the idle workers once every job is done, and waits for every
// worker to end if wait is set: the reader ends only when its read does.
// No job may be counted in jobs once stop has begun: a worker may still
// find one then (the reader's role passes on a timer), so whoever counts
// jobs does it under a lock that marks the end first, as Serve's ending
// does, and counts none past it.
func (c *workers) stop(wait bool) {
	c.jobs.Wait()
	close(c.quit)
	if wait {
		c.wg.Wait()
	}
}
