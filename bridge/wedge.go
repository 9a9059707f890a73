package bridge

import (
	"fmt"
	"time"
)

// wedgeTracker applies the wedge rule to an instance's inFlight table: an
// instance is wedged when it has answered nothing since the oldest
// deadline it has missed, for Grace after it (or after its last answer,
// if that came later) — whatever newer requests are still within their
// deadlines. A deadline is missed by a request still unanswered past it;
// with a liveness probe (Options.Probe), also by one answered only past it,
// since such a plugin (a translator) gives those answers itself, having
// stopped waiting for what is behind it: that answer shows nothing, and
// the stretch it missed lasts until an answer that does (lateSince).
//
// With a probe, the bridge sends it (Options.Probe) as soon as a deadline
// is missed and again whenever a check finds the instance not yet wedged
// with no probe outstanding: a live plugin answers it within Grace, and
// that answer counts.
//
// Whenever something is unanswered, the timer is armed no later than the
// first moment the rule could hold (or, with a probe, the first deadline, when
// the probe is due to go out); a check that finds it does not yet hold
// re-arms for the moment it next could. Its methods are called with
// inFlight.mu held.
type wedgeTracker struct {
	grace      time.Duration
	wedged     func(why string) // the rule holds: called once, without the lock
	probe      func()           // sends the liveness probe, without the lock; nil: none
	fire       func()           // the timer's: inFlight.checkWedge
	lastAnswer time.Time        // the last answer that shows the instance alive
	lateSince  time.Time        // with a probe: the oldest deadline missed by a request answered past it, since lastAnswer
	lateMethod string           // that request's method
	probing    bool             // a probe is unanswered
	clock      Clock
	timer      Timer
	armedAt    time.Time // when the timer fires; zero while disarmed
}

// lead is how long after a request's deadline the timer first looks at
// it: at once with a probe (the probe goes out), else Grace (the rule may
// hold).
func (w *wedgeTracker) lead() time.Duration {
	if w.probe != nil {
		return 0
	}
	return w.grace
}

// sent counts in a request due at due; moved, a request's due time moved
// to due. Either may bring the first moment the rule could hold forward.
func (w *wedgeTracker) sent(due time.Time) { w.moved(due) }

func (w *wedgeTracker) moved(due time.Time) {
	if at := due.Add(w.lead()); w.armedAt.IsZero() || w.armedAt.After(at) {
		w.arm(at)
	}
}

// answered records the answer to pc (nil: an answer to no request the host
// awaits, which shows the instance alive all the same). An answer only ever
// puts the finding off, so the timer is left as it is.
func (w *wedgeTracker) answered(pc *pendingCall) {
	now := w.clock.Now()
	if pc != nil && pc.probe {
		w.probing = false
	}
	if w.probe != nil && pc != nil && !pc.probe && !pc.due.After(now) {
		// Missed, unless the instance has shown itself alive since.
		if pc.due.After(w.lastAnswer) && (w.lateSince.IsZero() || pc.due.Before(w.lateSince)) {
			w.lateSince, w.lateMethod = pc.due, pc.method
		}
		return
	}
	w.lastAnswer, w.lateSince = now, time.Time{}
}

// stop ends the watch: the instance is gone. Nothing arms it again: the
// table it reads is empty, and takes nothing more.
func (w *wedgeTracker) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// arm makes the timer fire at at.
func (w *wedgeTracker) arm(at time.Time) {
	w.armedAt = at
	if w.timer == nil {
		w.timer = w.clock.AfterFunc(at.Sub(w.clock.Now()), w.fire)
		return
	}
	w.timer.Reset(at.Sub(w.clock.Now()))
}

// checkWedge applies the rule when the wedge timer fires.
func (f *inFlight) checkWedge() {
	f.mu.Lock()
	w := &f.wedge
	w.armedAt = time.Time{}
	if f.over() { // a firing that raced the end's stop
		f.mu.Unlock()
		return
	}
	// The oldest deadline missed, the method of the request that missed
	// it, and how many others did.
	oldest, first := w.lateSince, w.lateMethod
	missed, firstMissed := 0, false // requests unanswered past their deadlines (not counting a probe); whether first is one
	now := w.clock.Now()
	var next time.Time // the next deadline of a request unanswered within it
	for _, pc := range f.byID {
		if pc.due.After(now) {
			if next.IsZero() || pc.due.Before(next) {
				next = pc.due
			}
			continue
		}
		if !pc.probe {
			missed++
		}
		if oldest.IsZero() || pc.due.Before(oldest) {
			oldest, first, firstMissed = pc.due, pc.method, !pc.probe
		}
	}
	if oldest.IsZero() {
		// Nothing missed yet: look again at the next deadline.
		if !next.IsZero() {
			w.arm(next.Add(w.lead()))
		}
		f.mu.Unlock()
		return
	}
	since := oldest
	if w.lastAnswer.After(since) {
		since = w.lastAnswer
	}
	if at := since.Add(w.grace); now.Before(at) {
		probe := w.probe != nil && !w.probing
		w.probing = w.probing || probe
		w.arm(at)
		f.mu.Unlock()
		if probe {
			w.probe()
		}
		return
	}
	f.mu.Unlock()
	why := first + " unanswered past its deadline"
	if firstMissed {
		missed--
	}
	if others := missed; others > 0 {
		why = fmt.Sprintf("%s and %d other requests unanswered past their deadlines", first, others)
	}
	w.wedged(fmt.Sprintf("%s, and nothing answered for %s", why, w.grace))
}
