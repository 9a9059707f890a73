package bridge

import (
	"fmt"
	"time"
)

// An instance is unused when nothing is in flight on it: no read of the
// plugin (hold/release), no request of its own being answered, and no
// request of the host's unanswered (inFlight). Deadlines.IdleStop after it
// became unused it is stopped, which is no death: the plugin is idle (the
// state idle), as if it had not been started, and the next read starts it.

// armIdle starts inst's idle clock, just made live. Called with p.mu held.
func (p *Plugin) armIdle(inst *instance) {
	inst.lastUsed = p.opts.Clock.Now()
	inst.idleStop = p.opts.Clock.AfterFunc(p.opts.Deadlines.IdleStop, func() { p.idleCheck(inst) })
}

// hold counts a piece of work in on inst: with current, only if inst is
// still the live instance (a read must not hold one being stopped for
// idleness), which it reports.
func (p *Plugin) hold(inst *instance, current bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if current && p.sup.inst != inst {
		return false
	}
	inst.busy++
	return true
}

// release counts a piece of work out; the last one out restarts the idle
// clock.
func (p *Plugin) release(inst *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst.busy--
	inst.lastUsed = p.opts.Clock.Now()
	if inst.busy == 0 && inst.idleStop != nil && p.sup.inst == inst {
		inst.idleStop.Reset(p.opts.Deadlines.IdleStop)
	}
}

// idleCheck stops inst if it has been unused for IdleStop, and otherwise
// looks again when it next could have been. Work in flight re-arms the
// clock when it ends (release); a request past its deadline still unanswered is
// the wedge rule's, so the check waits it out.
func (p *Plugin) idleCheck(inst *instance) {
	p.mu.Lock()
	if p.sup.inst != inst || inst.busy > 0 {
		p.mu.Unlock()
		return
	}
	if left := p.opts.Deadlines.IdleStop - p.since(inst.lastUsed); left > 0 || inst.inFlight.unanswered() {
		inst.idleStop.Reset(max(left, p.opts.Deadlines.IdleStop/4, time.Millisecond))
		p.mu.Unlock()
		return
	}
	p.sup.move(idle)
	// It lived and was left alone: whatever deaths came before, it is
	// healthy now.
	p.sup.backoff.healthy()
	p.watchers.Add(1)
	p.mu.Unlock()
	defer p.watchers.Done()
	fmt.Fprintf(p.opts.Log, "bridge: idle for %s; stopped it (the next use starts it again)\n", p.opts.Deadlines.IdleStop)
	p.stopQuietly(inst)
}
