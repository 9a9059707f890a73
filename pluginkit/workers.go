package pluginkit

import (
	"sync"
	"sync/atomic"
)

// keptWorkers is how many workers stay when idle. A request on a fresh
// goroutine grows its stack, copying it, on its way into encoding/json;
// a kept worker has grown it already. Past this many at once, requests
// still each get a goroutine, which ends with its request.
const keptWorkers = 4

// workers runs each piece of work on a goroutine of its own, so a slow
// tool never holds up another request, without starting a goroutine per
// request: up to keptWorkers long-lived workers wait for work. Work goes
// to an idle worker if there is one; otherwise to a new goroutine, which
// stays on as a worker if fewer than keptWorkers are live and ends
// otherwise. Nothing ever waits for a worker to come free.
type workers struct {
	work chan func() // unbuffered: a send succeeds only into an idle worker
	quit chan struct{}
	live atomic.Int32
	wg   sync.WaitGroup
}

func newWorkers() *workers {
	return &workers{work: make(chan func()), quit: make(chan struct{})}
}

// run runs f on a goroutine other than the caller's. It must not be called
// once stop has been.
func (p *workers) run(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	if p.live.Add(1) <= keptWorkers {
		p.wg.Go(func() {
			defer p.live.Add(-1)
			f()
			p.loop()
		})
		return
	}
	p.live.Add(-1)
	p.wg.Go(f)
}

func (p *workers) loop() {
	for {
		select {
		case f := <-p.work:
			f()
		case <-p.quit:
			return
		}
	}
}

// stop ends the idle workers and waits for every goroutine run started.
func (p *workers) stop() {
	close(p.quit)
	p.wg.Wait()
}
