package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// pendingCall is the whole state of one of the host's requests to an
// instance, from just before it is written until it is answered: what
// waits for its answer, its deadline timer, its route, and what the wedge
// rule counts of it. It is in its instance's inFlight table while it is
// unanswered, even once its caller has stopped waiting, until the
// instance ends.
type pendingCall struct {
	inst   *instance
	id     jsonrpc2.ID
	method string
	answer chan reply // buffered: the reader never waits on a caller
	due    time.Time  // overdue from then, for the wedge rule; guarded by inFlight.mu
	probe  bool       // the wedge rule's liveness probe (Options.Probe)
	capped bool       // answered under a lowered line cap (the handshake's): a line over it answers it (errOverCap)

	// Its deadline timer: it closes expired at the deadline, which ends
	// the wait, and it guards the write as guardWrite guards any other.
	// One timer does both: one each and a context for the deadline cost
	// every call several allocations.
	timer      Timer
	expired    chan struct{} // closed at the deadline
	fired      bool          // expired is closed; the timer's own
	writeBound time.Duration // past it a blocked write means the plugin is not reading
	wrote      time.Time     // when the write began
	writing    atomic.Bool   // the write has not returned
	cancelSent atomic.Bool   // the plugin has been told to stop (cancelOnWire)

	// Its route, when it names a running call or stream (key, its callId
	// or streamId): where the plugin's progress, questions and deltas
	// about it go while its caller listens, and nowhere after.
	key      string
	ui       sdk.CallUI
	deltas   func(sdk.StreamEvent)
	activity chan struct{}      // a delta arrived (resets the provider's idle deadline)
	over     chan struct{}      // closed when the deltas pass the stream's cap
	ctx      context.Context    // ends questions asked on the call
	cancel   context.CancelFunc // ends ctx
	gate     sync.Mutex         // held across a delivery, so none reaches a caller after its Call returned
	ended    bool               // answered, or its caller gone: nothing more is delivered
	quiet    bool               // the caller stopped listening (a cancelled stream)
	left     int64              // the bytes of deltas still allowed (a stream's cap)
}

// reply is the answer to one of the host's requests: its result, or its
// error (the plugin's *jsonrpc2.Error, or errOverCap).
type reply struct {
	result json.RawMessage
	err    error
}

// errOverCap answers a capped request when a line over the cap comes.
var errOverCap = errors.New("a line over the cap came before the answer")

// newPendingCall is request id for req, due at due, not yet in the table.
func (inst *instance) newPendingCall(id jsonrpc2.ID, req proxy.Request, due time.Time) *pendingCall {
	pc := &pendingCall{inst: inst, id: id, method: req.Method, answer: make(chan reply, 1), due: due, expired: make(chan struct{})}
	if pc.key = req.CallID; pc.key == "" {
		pc.key = req.StreamID
	}
	if pc.key != "" {
		pc.ui, pc.deltas = req.UI, req.Deltas
		pc.ctx, pc.cancel = context.WithCancel(inst.ctx)
		if req.Deltas != nil {
			pc.activity, pc.over = make(chan struct{}, 1), make(chan struct{})
			pc.left = int64(inst.p.opts.Limits.ProviderResponseMiB) << 20
		}
	}
	return pc
}

// inFlight is what is in flight on an instance: the host's requests it
// has not answered, a pendingCall each, and the admission of the plugin's requests
// being answered. Its state changes only through the methods below (and
// the wedge rule's, wedge.go), each under mu; as in jsonrpc2_v2's
// inFlightState, one lock covers all of it.
type inFlight struct {
	ended chan struct{} // the instance's done, closed by close under mu: nothing more starts

	mu    sync.Mutex                   // the one lock over all of what follows
	byID  map[jsonrpc2.ID]*pendingCall // sent and unanswered
	byKey map[string]*pendingCall      // the routed ones whose caller still waits
	wedge wedgeTracker
}

func (f *inFlight) init(ended chan struct{}, grace time.Duration, clock Clock, wedged func(string), probe func()) {
	f.ended = ended
	f.byID, f.byKey = map[jsonrpc2.ID]*pendingCall{}, map[string]*pendingCall{}
	f.wedge = wedgeTracker{grace: grace, clock: clock, wedged: wedged, probe: probe, fire: f.checkWedge, lastAnswer: clock.Now()}
}

// add enters pc, about to be written: before the write, since its answer
// may arrive before the write returns. It refuses once the instance has
// ended.
func (f *inFlight) add(pc *pendingCall) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over() {
		return false
	}
	f.byID[pc.id] = pc
	if pc.key != "" {
		f.byKey[pc.key] = pc
	}
	f.wedge.sent(pc.due)
	return true
}

// answered records an answer with id, to a request unanswered or not: any answer
// shows the instance alive. It takes the request answered, if any, out of
// the table and ends its route before returning it, so nothing the plugin
// sends after its answer reaches the finished call.
func (f *inFlight) answered(id jsonrpc2.ID) *pendingCall {
	f.mu.Lock()
	pc := f.byID[id]
	if pc != nil {
		delete(f.byID, id)
		f.unroute(pc)
	}
	f.wedge.answered(pc)
	f.mu.Unlock()
	if pc != nil {
		pc.endRoute()
	}
	return pc
}

// done is pc's caller no longer waiting: its timer stops and its route
// ends. Unanswered, it stays unanswered: its late answer is still taken, and
// still counts as one.
func (f *inFlight) done(pc *pendingCall) {
	pc.timer.Stop()
	if pc.key == "" {
		return
	}
	f.mu.Lock()
	f.unroute(pc)
	f.mu.Unlock()
	pc.endRoute()
}

// drop takes out pc, whose write failed: no answer is due.
func (f *inFlight) drop(pc *pendingCall) {
	pc.timer.Stop()
	f.mu.Lock()
	delete(f.byID, pc.id)
	f.unroute(pc)
	if pc.probe {
		f.wedge.probing = false
	}
	f.mu.Unlock()
	pc.endRoute()
}

// extend moves pc's due time: a provider stream's every delta gives it
// ProviderIdle more, and a stream cut off at its bounds is due at once.
func (f *inFlight) extend(pc *pendingCall, due time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID[pc.id] == pc {
		pc.due = due
		f.wedge.moved(due)
	}
}

// overCap answers the capped requests (the handshake's) with errOverCap:
// a line over the lowered cap came, which would have been their answer.
// It shows the instance alive, as an answer does.
func (f *inFlight) overCap() {
	var hit []*pendingCall
	f.mu.Lock()
	for id, pc := range f.byID {
		if pc.capped {
			delete(f.byID, id)
			f.unroute(pc)
			f.wedge.answered(pc)
			hit = append(hit, pc)
		}
	}
	f.mu.Unlock()
	for _, pc := range hit {
		pc.endRoute()
		pc.answer <- reply{err: errOverCap}
	}
}

// unroute takes pc out of byKey. Called with mu held.
func (f *inFlight) unroute(pc *pendingCall) {
	if pc.key != "" && f.byKey[pc.key] == pc {
		delete(f.byKey, pc.key)
	}
}

// route is the running call or stream named key, or nil.
func (f *inFlight) route(key string) *pendingCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key]
}

// unanswered reports whether any request is unanswered.
func (f *inFlight) unanswered() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byID) > 0
}

// over reports whether the instance has ended. Checked under mu, under
// which close closes ended: what starts before it is failed or waited
// for, and nothing starts after.
func (f *inFlight) over() bool {
	select {
	case <-f.ended:
		return true
	default:
		return false
	}
}

// close is the instance's end (instance.end), with its reason: it closes
// the instance's done, the wedge watch stops, and every request
// unanswered fails with errEnded and the reason, answered once like any
// other and taken out of the table. Nothing is entered after it, and no
// handler of the plugin's requests starts.
func (f *inFlight) close(reason error) {
	f.mu.Lock()
	close(f.ended)
	f.wedge.stop()
	unanswered := f.byID
	f.byID, f.byKey = map[jsonrpc2.ID]*pendingCall{}, map[string]*pendingCall{}
	f.mu.Unlock()
	err := fmt.Errorf("%w (%v)", errEnded, reason)
	for _, pc := range unanswered {
		pc.endRoute()
		pc.answer <- reply{err: err}
	}
}

// errEnded is what a request meets when its instance ends unanswered, and
// a write once it has ended.
var errEnded = errors.New("the instance has ended")

// startHandler counts a handler of one of the plugin's requests into
// handlers, unless the instance has ended: the monitor waits for the
// handlers once, after the end, and one started after that would outlive
// the instance.
func (f *inFlight) startHandler(handlers *sync.WaitGroup) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over() {
		return false
	}
	handlers.Add(1)
	return true
}

// startTimer starts pc's deadline timer as its write begins; the deadline
// counts from start.
func (pc *pendingCall) startTimer(deadline time.Duration, start time.Time) {
	clock := pc.inst.p.opts.Clock
	pc.writeBound, pc.wrote = pc.inst.writeBound(deadline), clock.Now()
	pc.writing.Store(true)
	// Armed after pc.timer is set: tick may Reset it.
	pc.timer = clock.AfterFunc(time.Hour, pc.tick)
	pc.timer.Reset(max(deadline-pc.wrote.Sub(start), 0))
}

// written records that pc's write has returned.
func (pc *pendingCall) written() { pc.writing.Store(false) }

// tick runs at the deadline, and again at the write's bound if the write
// is still blocked then.
func (pc *pendingCall) tick() {
	if !pc.fired {
		pc.fired = true
		close(pc.expired)
		if h := pc.inst.wire.turns; h != nil {
			h.interrupt() // a caller may be reading (await)
		}
	}
	if !pc.writing.Load() {
		return
	}
	if left := pc.writeBound - pc.inst.p.since(pc.wrote); left > 0 {
		pc.timer.Reset(left)
		return
	}
	pc.inst.writeBlocked(pc.method, pc.writeBound)
}

// endRoute ends pc's route, if it has one: its questions are withdrawn
// and nothing more is delivered. Idempotent.
func (pc *pendingCall) endRoute() {
	if pc.key == "" {
		return
	}
	pc.cancel()
	pc.gate.Lock()
	pc.ended = true
	pc.gate.Unlock()
}

// mute stops deliveries to a caller that has stopped listening.
func (pc *pendingCall) mute() {
	pc.gate.Lock()
	pc.quiet = true
	pc.gate.Unlock()
}

func (pc *pendingCall) muted() bool {
	pc.gate.Lock()
	defer pc.gate.Unlock()
	return pc.quiet
}

// spend counts a delta of n bytes (its params as they crossed the wire)
// against the stream's cap, and reports whether it may be delivered. The
// first delta past the cap mutes the route and closes over: nothing more
// reaches the caller, so a stream that never ends costs it at most the cap.
func (pc *pendingCall) spend(n int) bool {
	pc.gate.Lock()
	defer pc.gate.Unlock()
	if pc.ended || pc.quiet {
		return false
	}
	if int64(n) > pc.left {
		pc.quiet = true
		close(pc.over)
		return false
	}
	pc.left -= int64(n)
	return true
}

// deliver runs f unless the route has ended or been muted. Holding the
// gate means no delivery can reach a caller after its Call has returned.
func (pc *pendingCall) deliver(f func()) {
	pc.gate.Lock()
	defer pc.gate.Unlock()
	if pc.ended || pc.quiet {
		return
	}
	f()
	if pc.activity != nil {
		select {
		case pc.activity <- struct{}{}:
		default:
		}
	}
}
