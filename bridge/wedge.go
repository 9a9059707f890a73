package bridge

import (
	"fmt"
	"time"
)

// wedgeTracker applies the wedge rule to an instance's inFlight table:
// an instance is wedged when it owes at least one answer, every request
// it owes is past its due time, and it has answered nothing for Grace
// since the later of its last answer and the latest of those due times.
// A call still within its deadline therefore protects the instance, so
// one slow request (a contributor dropped from its round) cannot take a
// healthy call on the same instance down with it.
//
// Whenever something is owed, the timer is armed no later than the first
// moment the rule could hold; a check that finds it does not yet re-arms
// for the moment it next could. A request or an answer touches the timer
// only to arm it when it is not armed, or when an answer brings that
// moment forward. Its methods are called with inFlight.mu held.
type wedgeTracker struct {
	grace      time.Duration
	verdict    func(why string) // the rule holds: called once, without the lock
	fire       func()           // the timer's: inFlight.checkWedge
	lastAnswer time.Time
	timer      *time.Timer
	armedAt    time.Time // when the timer fires; zero while disarmed
	over       bool      // the instance is gone, or the verdict is given
}

// sent counts in a request due at due.
func (w *wedgeTracker) sent(due time.Time) {
	if w.armedAt.IsZero() && !w.over {
		w.arm(due.Add(w.grace))
	}
}

// moved counts a request's due time moved to due: moved earlier, it brings
// the timer forward with it.
func (w *wedgeTracker) moved(due time.Time) {
	if at := due.Add(w.grace); !w.over && (w.armedAt.IsZero() || w.armedAt.After(at)) {
		w.arm(at)
	}
}

// answered records an answer; owes is whether anything is still owed.
func (w *wedgeTracker) answered(owes bool) {
	w.lastAnswer = time.Now()
	// The answered request may have been the one holding the verdict off
	// (a tool call within its deadline beside an overdue contributor): the
	// rule can hold again Grace from now, so the timer must not sleep past
	// that.
	if owes && !w.over && w.armedAt.After(w.lastAnswer.Add(w.grace)) {
		w.arm(w.lastAnswer.Add(w.grace))
	}
}

// dropped counts out a request never sent, which may have been holding the
// verdict off: the rule is checked again now.
func (w *wedgeTracker) dropped(owes bool) {
	if owes && !w.over {
		w.arm(time.Now())
	}
}

// stop ends the watch: the instance is gone.
func (w *wedgeTracker) stop() {
	w.over = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// arm makes the timer fire at at.
func (w *wedgeTracker) arm(at time.Time) {
	w.armedAt = at
	if w.timer == nil {
		w.timer = time.AfterFunc(time.Until(at), w.fire)
		return
	}
	w.timer.Reset(time.Until(at))
}

// checkWedge applies the rule when the wedge timer fires.
func (f *inFlight) checkWedge() {
	f.mu.Lock()
	w := &f.wedge
	w.armedAt = time.Time{}
	if w.over || len(f.byID) == 0 {
		f.mu.Unlock()
		return
	}
	since := w.lastAnswer
	var first *pendingCall // the longest overdue, to name in the notice
	for _, pc := range f.byID {
		if pc.due.After(since) {
			since = pc.due
		}
		if first == nil || pc.due.Before(first.due) {
			first = pc
		}
	}
	if at := since.Add(w.grace); time.Now().Before(at) {
		w.arm(at)
		f.mu.Unlock()
		return
	}
	w.over = true
	n, method := len(f.byID), first.method
	f.mu.Unlock()
	why := method + " unanswered past its deadline"
	if n > 1 {
		why = fmt.Sprintf("%s and %d other requests unanswered past their deadlines", method, n-1)
	}
	w.verdict(fmt.Sprintf("%s, and nothing answered for %s", why, w.grace))
}

// wedged stops an instance found wedged (owing answers it does not give,
// or not reading its input), with one notice saying why. However many
// requests and writes find it wedged, only the first verdict speaks and
// kills; a death already noticed, or a Close, says nothing more.
func (inst *instance) wedged(why string) {
	p := inst.p
	p.mu.Lock()
	if p.state == closed {
		p.mu.Unlock()
		return // Close is stopping it, and closing is not a death
	}
	p.watchers.Add(1)
	p.mu.Unlock()
	defer p.watchers.Done()
	if inst.claimNotice(&Notice{Plugin: p.opts.Name, Level: "error", Message: why + "; stopping the wedged instance"}) {
		inst.kill()
	}
}
