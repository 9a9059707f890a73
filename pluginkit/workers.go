package pluginkit

import (
	"sync"
	"sync/atomic"
	"time"
)

// keptWorkers is how many idle goroutines a crew keeps. A request on a
// fresh goroutine grows its stack, copying it, on its way into the
// plugin's code; a kept one has grown it already.
const keptWorkers = 4

// job is work the reader found: a request (call), an observation.
type job interface{ work() }

// crew serves an instance on a few long-lived goroutines, taking turns as
// the reader. The reader reads lines until one makes a job, and runs the
// job itself, on the goroutine that read it, with no switch before its
// answer. Before it does, it arms the relief: a timer, due at once, that
// hands the reader's role to an idle member (one is started if none is
// idle). So while the job runs, another member reads on: a slow tool never
// holds up a cancel, an answer it waits for, or another request, and every
// request has a goroutine of its own. A member relieved, done with its
// job, waits to be the reader again; past keptWorkers idle members, it
// ends.
//
// A job that finishes before the relief is due disarms it and reads on
// itself. In a wasm guest that is the usual case, and it is the point: the
// guest has one thread, timers are run only when the running goroutine
// blocks, and a goroutine switch there unwinds and rewinds the whole
// stack, each frame an exit to the runtime under wazero's termination
// checks (tens of µs a call). A job that never blocks is relieved by no
// one and costs no switch; one that blocks (a slow tool, an Ask waiting
// for its answer) is relieved as soon as it does. Natively the timer fires
// on another thread within microseconds, as the hand-over always did.
type crew struct {
	next func() job // the reader's work: the next job, or nil once reading has ended

	relief  *time.Timer // due while the reader runs a job; its tick makes an idle member the reader
	reading sync.Mutex  // held by the reader while it reads: the hand-over's happens-before edge
	quit    chan struct{}
	idle    atomic.Int32   // members waiting for the relief, and members started to
	jobs    sync.WaitGroup // every job found and not yet done: Add under the server's lock
	wg      sync.WaitGroup // every member
}

func newCrew(next func() job) *crew {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &crew{next: next, relief: t, quit: make(chan struct{})}
}

// start makes the first member the reader.
func (c *crew) start() { c.wg.Go(c.member) }

// member reads until it finds a job, runs it, and reads on unless it was
// relieved meanwhile; a relieved member waits for its next turn.
func (c *crew) member() {
	for {
		c.reading.Lock()
		j := c.next()
		c.reading.Unlock()
		if j == nil {
			return // reading has ended
		}
		c.arm()
		j.work()
		c.jobs.Done()
		if c.relief.Stop() {
			continue // no one took over: still the reader
		}
		if !c.await() {
			return
		}
	}
}

// arm makes sure an idle member will take the reader's role if the job
// blocks: the relief is due at once, and some member waits for it.
func (c *crew) arm() {
	if c.idle.Load() == 0 {
		c.idle.Add(1) // counted before it starts, so a second job does not start another
		c.wg.Go(c.relieve)
	}
	c.relief.Reset(0)
}

// relieve is a member started idle.
func (c *crew) relieve() {
	if c.wait() {
		c.member()
	}
}

// await waits for the reader's role, reporting false if the member
// should end instead: the crew is stopping, or enough are idle.
func (c *crew) await() bool {
	if c.idle.Add(1) > keptWorkers {
		c.idle.Add(-1)
		return false
	}
	return c.wait()
}

// wait is an idle member's wait, already counted in idle.
func (c *crew) wait() bool {
	defer c.idle.Add(-1)
	select {
	case <-c.relief.C:
		return true
	case <-c.quit:
		return false
	}
}

// stop ends the idle members once every job is done, and waits for every
// member to end if wait is set: the reader ends only when its read does.
func (c *crew) stop(wait bool) {
	c.jobs.Wait()
	close(c.quit)
	if wait {
		c.wg.Wait()
	}
}
