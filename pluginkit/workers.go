package pluginkit

import (
	"sync"
	"sync/atomic"
)

// keptWorkers is how many idle goroutines a crew keeps. A request on a
// fresh goroutine grows its stack, copying it, on its way into the
// plugin's code; a kept one has grown it already.
const keptWorkers = 4

// job is work the reader found: a request (call), an observation.
type job interface{ work() }

// crew serves an instance on a few long-lived goroutines, taking turns as
// the reader (leader and followers). The reader reads lines until one
// makes a job; then it hands the reader's role to an idle member (or a
// new goroutine, when none is idle) and runs the job itself. So the job
// starts at once, on the goroutine that read it, with no switch before its
// answer, while another goroutine reads on: a slow tool never holds up a
// cancel or another request, and every request has a goroutine of its
// own. A member done with its job waits to read again; past keptWorkers
// idle members, it ends.
type crew struct {
	next func() job // the reader's work: the next job, or nil once reading has ended

	turn chan struct{} // unbuffered: a send succeeds only into an idle member
	quit chan struct{}
	idle atomic.Int32
	jobs sync.WaitGroup // every job found and not yet done: Add under the server's lock
	wg   sync.WaitGroup // every member
}

func newCrew(next func() job) *crew {
	return &crew{next: next, turn: make(chan struct{}), quit: make(chan struct{})}
}

// start makes the first member the reader.
func (c *crew) start() { c.wg.Go(c.member) }

func (c *crew) member() {
	for {
		j := c.next()
		if j == nil {
			return // reading has ended
		}
		c.pass()
		j.work()
		c.jobs.Done()
		if !c.await() {
			return
		}
	}
}

// pass gives the reader's role to an idle member, or to a new one.
func (c *crew) pass() {
	select {
	case c.turn <- struct{}{}:
	default:
		c.wg.Go(c.member)
	}
}

// await waits for the reader's role, reporting false if the member
// should end instead: the crew is stopping, or enough are idle.
func (c *crew) await() bool {
	defer c.idle.Add(-1)
	if c.idle.Add(1) > keptWorkers {
		return false
	}
	select {
	case <-c.turn:
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
