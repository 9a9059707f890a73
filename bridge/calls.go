package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// send enters request id for req in the table and writes it, its deadline
// counting from start. An instance that has ended sends nothing (errEnded).
func (inst *instance) send(id jsonrpc2.ID, req proxy.Request, deadline time.Duration, start time.Time) (*pendingCall, error) {
	pc := inst.newPendingCall(id, req, start.Add(deadline))
	return pc, inst.sendPending(pc, req, deadline, start)
}

// sendPending enters pc, for req, in the table and writes it (send).
func (inst *instance) sendPending(pc *pendingCall, req proxy.Request, deadline time.Duration, start time.Time) error {
	id := pc.id
	// The timer exists before pc is in the table, where an answer (a
	// forged one too) may find it at once and stop it.
	pc.startTimer(deadline, start)
	if !inst.inFlight.add(pc) {
		pc.timer.Stop()
		pc.endRoute()
		return errEnded
	}
	err := inst.wire.sendRequest(id, req.Method, req.Params)
	pc.written()
	if err != nil {
		inst.inFlight.drop(pc)
		if inst.ended() {
			return errEnded
		}
		return err
	}
	return nil
}

// probe sends the wedge rule's liveness probe (Options.Probe), due Grace
// from now. No one waits for its answer: taken like any other, it shows
// the instance alive (see wedgeTracker).
func (inst *instance) probe() {
	p := inst.p
	id := p.newID()
	req := proxy.Request{Method: p.opts.Probe}
	start := p.opts.Clock.Now()
	pc := inst.newPendingCall(id, req, start.Add(p.opts.Deadlines.Grace))
	pc.probe = true
	_ = inst.sendPending(pc, req, p.opts.Deadlines.Grace, start)
}

// newID names one of the host's requests: "h" and a number, a string id,
// so an answer finds its request.
func (p *Plugin) newID() jsonrpc2.ID {
	return jsonrpc2.ID{Str: "h" + strconv.FormatUint(p.nextReq.Add(1), 10), IsString: true}
}

// handshake sends initialize, an ordinary request in the table under its
// own deadline (Deadlines.Initialize), and waits for its answer, read
// under the declaration's cap (MaxDeclaration): a line over it answers it
// with errOverCap.
func (inst *instance) handshake(ctx context.Context, answer *json.RawMessage) error {
	p := inst.p
	req := proxy.Request{Method: protocol.MethodInitialize, Params: protocol.InitializeParams{
		Protocol: protocol.Version, PluginRoot: p.opts.Root, Config: orNull(p.opts.Config), Env: orEmpty(p.opts.Env),
		DataDir: p.opts.DataDir,
	}}
	deadline, start := p.opts.Deadlines.Initialize, p.opts.Clock.Now()
	// Its id is 0, a number, as it has always been on the wire: no
	// request of the host's has another number id (newID).
	pc := inst.newPendingCall(jsonrpc2.ID{}, req, start.Add(deadline))
	pc.capped = true
	inst.wire.stream.SetMaxLine(min(MaxDeclaration, cmp.Or(p.opts.MaxLine, protocol.DefaultMaxLine)))
	defer inst.wire.stream.SetMaxLine(0)
	if err := inst.sendPending(pc, req, deadline, start); err != nil {
		return err
	}
	defer inst.inFlight.done(pc)
	return pc.wait(ctx, pc.expired, answer)
}

// takeAnswer takes the answer r to the host's request id, on whichever
// goroutine read it (the wire's reader, or a caller reading in its turn:
// see await), and reports whether id was one of the host's unanswered requests.
func (inst *instance) takeAnswer(id jsonrpc2.ID, r reply) bool {
	pc := inst.inFlight.answered(id)
	if pc == nil {
		return false
	}
	if pc.probe {
		pc.timer.Stop() // no one waits for it
		return true
	}
	pc.answer <- r
	return true
}

// wait waits for the answer and decodes its result into result, as
// jsonrpc2's Waiter does: ctx's error when ctx ends first, errPastDeadline
// when due is closed first (the request's deadline; nil: none),
// errEnded when the instance ends first, the plugin's
// *jsonrpc2.Error when it answered with one, errOverCap when a line over
// the cap it is read under came instead; and ctx's error or
// errPastDeadline, whatever has arrived, when either has passed before
// the wait begins. A request whose wait ended unanswered stays
// registered: its late answer is still taken, and still counts as one.
func (pc *pendingCall) wait(ctx context.Context, due <-chan struct{}, result any) error {
	// Begun past its end (a write that blocked past the deadline): an
	// answer that has arrived since came too late all the same, and the
	// select below would pick between them at random.
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-due:
		return errPastDeadline
	default:
	}
	r, err := pc.await(ctx, due)
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	switch result := result.(type) {
	case nil:
		return nil
	case json.Unmarshaler:
		// The line decoded, so the result is valid JSON already:
		// json.Unmarshal would only scan it once more before handing it
		// over.
		return result.UnmarshalJSON(r.result)
	}
	return json.Unmarshal(r.result, result)
}

// await waits for the answer. Where the wire allows it (a transport whose
// reads can be interrupted), the waiting caller reads the wire itself
// whenever no one else is (readerHandoff): its own answer then wakes
// it from the poller, with no hand-over from another goroutine, and a
// line for anyone else goes where the reader would have sent it. A
// caller reading when ctx ends, or due passes (see tick), is
// interrupted. The instance's end answers it too (inFlight.close).
func (pc *pendingCall) await(ctx context.Context, due <-chan struct{}) (reply, error) {
	w := pc.inst.wire
	s := w.turns
	var turn <-chan struct{} // nil, never ready, without turns
	if s != nil {
		s.enter()
		defer s.leave()
		if ctx.Done() != nil {
			defer context.AfterFunc(ctx, s.interrupt)()
		}
		turn = s.roleReady()
	}
	over := func() bool {
		select {
		case <-due:
			return true
		default:
			return ctx.Err() != nil
		}
	}
	for {
		select {
		case r := <-pc.answer:
			return r, nil
		case <-due:
			return reply{}, errPastDeadline
		case <-ctx.Done():
			return reply{}, ctx.Err()
		case <-turn:
			select {
			case r := <-pc.answer: // read by the reader before
				s.release()
				return r, nil
			default:
			}
			w.readTurn(over)
		}
	}
}

// Call implements proxy.Caller.
func (p *Plugin) Call(ctx context.Context, req proxy.Request, result any) error {
	// The deadline counts from here: a respawn the call has to wait for
	// is part of it.
	deadline := req.Kind.Deadline(p.opts.Deadlines)
	start := p.opts.Clock.Now()
	inst, started, err := p.acquire(ctx, deadline)
	if err != nil {
		return err
	}
	if started {
		start = p.opts.Clock.Now()
	}
	defer p.release(inst)
	pc, err := inst.send(p.newID(), req, deadline, start)
	if err != nil {
		return p.callError(inst, req, err)
	}
	defer inst.inFlight.done(pc)
	if req.Deltas != nil {
		return p.waitStream(ctx, inst, req, pc, deadline, result)
	}

	// The wait ends at the deadline; a cancellable request (a tool call)
	// outlives its caller's cancellation, telling the plugin instead, and
	// withdrawing any question it has put to the person. Its deadline
	// cancels it the same way, once.
	waitCtx := ctx
	if req.CancelMethod != "" {
		waitCtx = context.Background()
		if ctx.Done() != nil {
			defer context.AfterFunc(ctx, func() { pc.cancelOnWire(req) })()
		}
	}
	err = pc.wait(waitCtx, pc.expired, result)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errPastDeadline):
		// Still unanswered: its answer, if it comes, is still taken, and the
		// wedge rule decides whether the instance is stuck.
		if req.CancelMethod != "" {
			pc.cancelOnWire(req)
		}
		return &DeadlineError{Plugin: p.opts.Name, Method: req.Method, After: deadline}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("plugin %s: %s: %w", p.opts.Name, req.Method, ctx.Err())
	case gone(err) && p.since(start) >= deadline:
		// The deadline passed first; the instance was then killed (as
		// wedged, most likely) before this wait woke to see it, as it may
		// on a starved machine. The caller hears what it would have heard
		// on time, after the death's notice.
		<-inst.recorded
		return &DeadlineError{Plugin: p.opts.Name, Method: req.Method, After: deadline}
	case isRemote(err) && p.since(start) >= deadline:
		// An error answer that came as the deadline passed, as a plugin
		// bounded by the same deadline (the MCP translator) sends: the
		// deadline was first, so the caller hears it, as on time.
		return &DeadlineError{Plugin: p.opts.Name, Method: req.Method, After: deadline}
	}
	return p.callError(inst, req, err)
}

// cancelOnWire tells the plugin to stop working on pc, req's (its
// CancelMethod), and withdraws any question it has put to the person:
// once, whether its caller's cancellation or its deadline came first.
func (pc *pendingCall) cancelOnWire(req proxy.Request) {
	if pc.cancelSent.Swap(true) {
		return
	}
	if pc.key != "" {
		pc.cancel()
	}
	_ = pc.inst.notify(req.CancelMethod, req.CancelParams)
}

// isRemote reports whether err is the plugin's own error answer.
func isRemote(err error) bool {
	var rerr *jsonrpc2.Error
	return errors.As(err, &rerr)
}

// errPastDeadline is a wait ended by the request's own deadline.
var errPastDeadline = errors.New("past the request's deadline")

// cutOff ends a stream past one of its bounds, with err: nothing more
// reaches the caller, the plugin is told to stop, the person hears why in
// one notice, and the stream is due now, so a plugin that does not end it
// is wedged like any other (see wedgeTracker).
func (p *Plugin) cutOff(inst *instance, req proxy.Request, pc *pendingCall, why string, err error) error {
	pc.mute()
	inst.inFlight.extend(pc, p.opts.Clock.Now())
	pc.cancelOnWire(req)
	p.opts.Raise(Notice{Plugin: p.opts.Name, Level: "warn", Message: req.Method + " " + why + "; cancelled it"})
	return err
}

// waitStream waits for a provider stream's answer. Its deadline is for the
// first delta, then for the silence between two: every delta resets it.
// Cancelling ctx sends the cancel notification and keeps waiting. However
// lively, a stream past its total deadline or its cap is cut off.
func (p *Plugin) waitStream(ctx context.Context, inst *instance, req proxy.Request, pc *pendingCall, deadline time.Duration, result any) error {
	timer := p.opts.Clock.NewTimer(deadline)
	defer timer.Stop()
	total := p.opts.Clock.NewTimer(p.opts.Deadlines.ProviderTotal)
	defer total.Stop()

	waitCtx, stopWait := context.WithCancel(context.Background())
	defer stopWait()
	answered := make(chan error, 1)
	go func() { answered <- pc.wait(waitCtx, nil, result) }()

	cancelled := ctx.Done()
	for {
		select {
		case err := <-answered:
			return p.callError(inst, req, err)
		case <-cancelled:
			// The caller has stopped listening: nothing more reaches it,
			// and deltas no longer extend the wait. The plugin has what is
			// left of the current deadline to end the stream.
			pc.mute()
			pc.cancelOnWire(req)
			cancelled = nil
		case <-pc.activity:
			if pc.muted() {
				continue
			}
			// The wedge rule's due time moves first, then the stream's
			// own timer: one armed for ProviderIdle means both have moved.
			deadline = p.opts.Deadlines.ProviderIdle
			inst.inFlight.extend(pc, p.opts.Clock.Now().Add(deadline))
			if !timer.Stop() {
				<-timer.C()
			}
			timer.Reset(deadline)
		case <-timer.C():
			stopWait()
			<-answered
			pc.cancelOnWire(req) // a deadline cancels as an interrupt does
			return &DeadlineError{Plugin: p.opts.Name, Method: req.Method, After: deadline}
		case <-total.C():
			stopWait()
			<-answered
			return p.cutOff(inst, req, pc, "went on past its total deadline of "+p.opts.Deadlines.ProviderTotal.String(),
				&DeadlineError{Plugin: p.opts.Name, Method: req.Method, After: p.opts.Deadlines.ProviderTotal})
		case <-pc.over:
			stopWait()
			<-answered
			return p.cutOff(inst, req, pc, fmt.Sprintf("sent more than %d MiB", p.opts.Limits.ProviderResponseMiB),
				&TooLargeError{Plugin: p.opts.Name, Method: req.Method, MiB: p.opts.Limits.ProviderResponseMiB})
		}
	}
}

func (p *Plugin) callError(inst *instance, req proxy.Request, err error) error {
	var rerr *jsonrpc2.Error
	switch {
	case err == nil:
		return nil
	case gone(err):
		// The instance died under the call. Its death is recorded (and its
		// one notice raised) before the caller hears of it, so a caller
		// that ends the run at once cannot race the notice away. (Not
		// <-inst.dead: this call may be one of the instance's own service
		// handlers, which dead waits for.)
		<-inst.recorded
		return fmt.Errorf("plugin %s stopped during %s: %w", p.opts.Name, req.Method, sdk.ErrUnavailable)
	case errors.As(err, &rerr):
		return &RemoteError{Plugin: p.opts.Name, Method: req.Method, Code: rerr.Code, Message: rerr.Message}
	}
	return fmt.Errorf("plugin %s: %s: %w", p.opts.Name, req.Method, err)
}

// gone reports whether err is the wire's end: the instance has ended, or
// is ending (killed, as a wedged one is), whether the read or the write
// found out first.
func gone(err error) bool {
	return errors.Is(err, errEnded) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, transport.ErrKilled)
}

// DeadlineError is the error of a request past its deadline. It matches
// context.DeadlineExceeded with errors.Is.
type DeadlineError struct {
	Plugin, Method string
	After          time.Duration
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("plugin %s: %s did not answer within %s", e.Plugin, e.Method, e.After)
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *DeadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// TooLargeError is the error of a provider stream cut off at the cap on
// one response (Limits.ProviderResponseMiB).
type TooLargeError struct {
	Plugin, Method string
	MiB            int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("plugin %s: %s: the response passed %d MiB, the cap on one response", e.Plugin, e.Method, e.MiB)
}

// RemoteError is a JSON-RPC error the plugin answered with.
type RemoteError struct {
	Plugin, Method string
	Code           int64
	Message        string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s", e.Plugin, e.Method, e.Message)
}
