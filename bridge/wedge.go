package bridge

import (
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// owed is what one instance owes the host: its unanswered requests, each
// with its deadline, and when it last answered anything. It applies the
// wedge rule: an instance is wedged when it owes at least one answer,
// every request it owes is past its deadline, and it has answered nothing
// for Grace since the later of its last answer and the latest of those
// deadlines. A call still within its deadline therefore protects the
// instance, so one slow request (a contributor dropped from its round)
// cannot take a healthy call on the same instance down with it.
//
// Whenever something is owed, its timer is armed no later than the first
// moment the rule could hold; a check that finds it does not yet re-arms
// for the moment it next could. The hot path (a request, an answer) takes
// one lock, and touches the timer only to arm it when it is not armed, or
// when an answer brings that moment forward.
type owed struct {
	grace   time.Duration
	verdict func(why string) // the rule holds: called once, without mu

	mu         sync.Mutex
	calls      map[jsonrpc2.ID]owedCall
	lastAnswer time.Time
	timer      *time.Timer
	armedAt    time.Time // when the timer fires; zero while disarmed
	ended      bool      // the instance is gone, or the verdict is given
}

type owedCall struct {
	method string
	due    time.Time
}

func newOwed(grace time.Duration, verdict func(string)) *owed {
	return &owed{grace: grace, verdict: verdict, calls: map[jsonrpc2.ID]owedCall{}, lastAnswer: time.Now()}
}

// request records a request about to be sent, answerable until due. It is
// recorded before the write, because the answer may arrive before the
// write returns.
func (o *owed) request(id jsonrpc2.ID, method string, due time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[id] = owedCall{method: method, due: due}
	if o.armedAt.IsZero() && !o.ended {
		o.arm(due.Add(o.grace))
	}
}

// extend moves a request's deadline: a provider stream's every delta
// gives it ProviderIdle more, and a stream cut off at its bounds is due at
// once. A deadline moved earlier brings the timer forward with it.
func (o *owed) extend(id jsonrpc2.ID, due time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.calls[id]; ok {
		c.due = due
		o.calls[id] = c
		if at := due.Add(o.grace); !o.ended && (o.armedAt.IsZero() || o.armedAt.After(at)) {
			o.arm(at)
		}
	}
}

// answered records an answer, to a request it owes or not: any answer shows
// the instance is alive.
func (o *owed) answered(id jsonrpc2.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.calls, id)
	o.lastAnswer = time.Now()
	// The answered request may have been the one holding the verdict off
	// (a tool call within its deadline beside an overdue contributor): the
	// rule can hold again Grace from now, so the timer must not sleep past
	// that.
	if len(o.calls) > 0 && !o.ended && o.armedAt.After(o.lastAnswer.Add(o.grace)) {
		o.arm(o.lastAnswer.Add(o.grace))
	}
}

// forget drops a request that was never sent: it is owed nothing. It may
// have been holding the verdict off, so the rule is checked again now.
func (o *owed) forget(id jsonrpc2.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.calls, id)
	if len(o.calls) > 0 && !o.ended {
		o.arm(time.Now())
	}
}

// pending reports whether anything is owed.
func (o *owed) pending() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.calls) > 0
}

// stop ends the watch: the instance is gone.
func (o *owed) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = true
	if o.timer != nil {
		o.timer.Stop()
	}
}

// arm makes the timer fire at at. Called with mu held.
func (o *owed) arm(at time.Time) {
	o.armedAt = at
	if o.timer == nil {
		o.timer = time.AfterFunc(time.Until(at), o.check)
		return
	}
	o.timer.Reset(time.Until(at))
}

// check applies the rule when the timer fires.
func (o *owed) check() {
	o.mu.Lock()
	o.armedAt = time.Time{}
	if o.ended || len(o.calls) == 0 {
		o.mu.Unlock()
		return
	}
	since := o.lastAnswer
	var first *owedCall // the longest overdue, to name in the notice
	for _, c := range o.calls {
		if c.due.After(since) {
			since = c.due
		}
		if first == nil || c.due.Before(first.due) {
			first = &c
		}
	}
	if at := since.Add(o.grace); time.Now().Before(at) {
		o.arm(at)
		o.mu.Unlock()
		return
	}
	o.ended = true
	n := len(o.calls)
	o.mu.Unlock()
	why := first.method + " unanswered past its deadline"
	if n > 1 {
		why = fmt.Sprintf("%s and %d other requests unanswered past their deadlines", first.method, n-1)
	}
	o.verdict(fmt.Sprintf("%s, and nothing answered for %s", why, o.grace))
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
