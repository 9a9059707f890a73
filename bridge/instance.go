package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// instance is one running incarnation of a plugin: a session. It ends
// once, in end; its monitor goroutine then tears it down and reports its
// death.
type instance struct {
	p       *Plugin
	conn    transport.Conn
	wire    *wire           // the connection: one reader, one writer (wire.go)
	ctx     context.Context // ends when the instance does
	cancel  context.CancelFunc
	started time.Time

	// The host's requests it has not answered, and the admission of handlers for its
	// own (pending.go): the one table of what is in flight on it.
	inFlight inFlight

	// Its end, the one terminal state, changed only by end: done is closed
	// once, reason set before. Whatever knows the instance has ended reads
	// done: the wire refuses writes, the inFlight table starts nothing, the
	// monitor tears it down.
	endOnce sync.Once
	done    chan struct{}
	reason  error

	// Guarded by p.mu: whether it went live (install: through its
	// handshake, the plugin's instance); the work in flight on it, when
	// the last ended, and the clock that stops it once unused (idle.go).
	live     bool
	busy     int
	lastUsed time.Time
	idleStop Timer

	// The instance's one notice: the first to claim it (its death, a wedge
	// finding, or a stop that needs none) decides what it says.
	noticeMu      sync.Mutex // held while the notice is raised (claimNotice)
	noticeClaimed bool

	exited   chan struct{} // closed once conn.Wait has returned
	exitErr  error
	killErr  error          // what conn.Kill could not do; set before dead is closed
	recorded chan struct{}  // closed once its death is recorded and noticed
	dead     chan struct{}  // closed once everything the instance started has ended
	handlers sync.WaitGroup // the plugin's requests being answered; dead waits for them

	handlerSlots chan struct{} // a token per request of the plugin's being answered (MaxPluginRequests)
	answering    sync.Mutex    // one answer written at a time, each guarded from its turn on
}

func (p *Plugin) newInstance(conn transport.Conn) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{
		p: p, conn: conn, ctx: ctx, cancel: cancel, started: p.opts.Clock.Now(), done: make(chan struct{}),
		exited: make(chan struct{}), recorded: make(chan struct{}), dead: make(chan struct{}),
		handlerSlots: make(chan struct{}, MaxPluginRequests),
	}
	var probe func()
	if p.opts.Probe != "" {
		probe = inst.probe
	}
	inst.inFlight.init(inst.done, p.opts.Deadlines.Grace, p.opts.Clock, inst.wedged, probe)
	sopts := protocol.LineStreamOptions{MaxLine: p.opts.MaxLine}
	if p.opts.Trace {
		sopts.Trace = p.traceLine
	}
	inst.wire = newWire(conn, sopts, inst.done, wireHooks{
		notify: inst.notification,
		answer: inst.takeAnswer,
		serve:  inst.serve,
		skipped: func(line []byte, why error) {
			fmt.Fprintf(p.opts.Log, "bridge: skipped a stdout line (%v): %q\n", why, line)
			if errors.Is(why, protocol.ErrLineTooLong) {
				inst.inFlight.overCap() // the handshake's declaration, if it waits for one
			}
		},
		end: func(why error) { inst.end(why) },
		log: p.opts.Log,
	})
	go inst.wire.run()
	go func() {
		inst.exitErr = conn.Wait()
		close(inst.exited)
		inst.end(inst.waitReason()) // a process that exited cannot answer
	}()
	go inst.monitor()
	return inst
}

// end ends the instance, once: the first reason given is its reason, and
// a later call changes nothing. The in-flight table closes done and fails
// every request unanswered with errEnded and the reason (nothing is sent
// or started after); then the instance's context ends and its stdin
// closes, so a well-behaved plugin exits; the monitor does the rest. It
// reports whether this call ended it, and then what closing stdin could
// not do.
func (inst *instance) end(reason error) (first bool, stdin error) {
	inst.endOnce.Do(func() {
		first = true
		inst.reason = reason
		inst.inFlight.close(reason)
		inst.cancel()
		stdin = inst.wire.stream.Close()
	})
	return first, stdin
}

// ended reports whether the instance has ended.
func (inst *instance) ended() bool {
	select {
	case <-inst.done:
		return true
	default:
		return false
	}
}

// monitor tears the instance down once it has ended: it makes sure the
// process has, reports the death, and waits for what the instance
// started.
func (inst *instance) monitor() {
	<-inst.done
	inst.killErr = inst.conn.Kill()
	<-inst.exited
	inst.p.died(inst, inst.waitReason())
	close(inst.recorded)
	inst.handlers.Wait()
	<-inst.wire.ran // the conn's end, or the kill, has ended its read
	close(inst.dead)
}

// waitReason is why the instance ended, once it has.
func (inst *instance) waitReason() error {
	select {
	case <-inst.exited:
		if inst.exitErr == nil {
			return fmt.Errorf("exited")
		}
		return inst.exitErr
	default:
		return fmt.Errorf("closed its stdout")
	}
}

// stop ends the instance gracefully (stdin closed first) and waits for it.
// Its end is no death: it raises no notice. It reports what it could not
// do: close the instance's stdin, or kill it.
func (inst *instance) stop() error {
	inst.claimNotice(nil)
	var err error
	if _, stdin := inst.end(errStopped); stdin != nil {
		err = fmt.Errorf("closing its stdin: %w", stdin)
	}
	<-inst.dead
	if inst.killErr != nil {
		err = errors.Join(err, fmt.Errorf("stopping it: %w", inst.killErr))
	}
	return err
}

// wedged stops an instance found wedged (answers unsent,
// or not reading its input), with one notice saying why. However many
// requests and writes find it wedged, only the first finding speaks and
// kills; a death already noticed, or a Close, says nothing more.
func (inst *instance) wedged(why string) {
	p := inst.p
	p.mu.Lock()
	if p.sup.state == closed {
		p.mu.Unlock()
		return // Close is stopping it, and closing is not a death
	}
	if !inst.live {
		p.mu.Unlock()
		inst.kill() // its failed start says why
		return
	}
	p.watchers.Add(1)
	p.mu.Unlock()
	defer p.watchers.Done()
	if inst.claimNotice(&Notice{Plugin: p.opts.Name, Level: "error", Message: why + "; stopping the wedged instance"}) {
		p.retire(inst)
		inst.kill()
	}
}

// retire counts inst dead as soon as it is found wedged, before the kill
// that may take a while (a remote session's end is a request to a server
// that may be the one not answering): a use that comes meanwhile starts a
// fresh instance rather than being handed the one being stopped. Its
// death, when it comes, finds it no longer current and changes nothing.
func (p *Plugin) retire(inst *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sup.inst == inst {
		p.sup.move(dead)
		now := p.opts.Clock.Now()
		p.sup.backoff.died(now, now.Sub(inst.started))
	}
}

// claimNotice raises n as the instance's one notice, unless it has been
// claimed already (a nil n claims it and says nothing). It reports whether
// n was the one. The notice is raised under the claim, so whoever loses
// it (a death racing a wedge) returns only once it is out.
func (inst *instance) claimNotice(n *Notice) bool {
	inst.noticeMu.Lock()
	defer inst.noticeMu.Unlock()
	if inst.noticeClaimed {
		return false
	}
	inst.noticeClaimed = true
	if n != nil {
		inst.p.opts.Raise(*n)
	}
	return true
}

// guardWrite runs write, which sends one message to the plugin. A plugin
// that does not read its stdin blocks that write forever, so a write still
// blocked after its bound marks the instance wedged: it is killed (which
// ends the write), with one notice, and the death rules apply. The bound
// is the request's deadline but never less than Grace: a deadline bounds
// how long an answer may take, not how soon a healthy plugin, busy with
// something else, gets round to reading. A notification (deadline 0) has
// Grace.
func (inst *instance) guardWrite(deadline time.Duration, what string, write func() error) error {
	bound := inst.writeBound(deadline)
	t := inst.p.opts.Clock.AfterFunc(bound, func() { inst.writeBlocked(what, bound) })
	defer t.Stop()
	return write()
}

// writeBound is how long a write of a message with deadline may block
// before the plugin is taken as not reading its input (guardWrite).
func (inst *instance) writeBound(deadline time.Duration) time.Duration {
	return max(deadline, inst.p.opts.Deadlines.Grace)
}

// writeBlocked marks the instance wedged: sending what blocked for bound.
func (inst *instance) writeBlocked(what string, bound time.Duration) {
	inst.wedged(fmt.Sprintf("not reading its input: sending %s blocked for %s", what, bound))
}

// notify sends a notification, guarded like any write.
func (inst *instance) notify(method string, params any) error {
	return inst.guardWrite(0, method, func() error {
		return inst.wire.notify(method, params)
	})
}

// kill ends the instance now; the monitor reports the death.
func (inst *instance) kill() {
	_ = inst.conn.Kill()
	inst.end(errWedged)
}

// The reasons the host ends an instance (end).
var (
	errStopped = errors.New("stopped")
	errWedged  = errors.New("killed as wedged")
)

// notification handles what the plugin tells the host. It runs on
// whichever goroutine read it, holding the reader's role, so notifications
// are handled in wire order: a stream's deltas all arrive before its
// answer, a call's progress before its result.
func (inst *instance) notification(method string, params json.RawMessage) {
	p := inst.p
	switch method {
	case protocol.NotifyToolProgress:
		var n protocol.ToolProgress
		if json.Unmarshal(params, &n) == nil {
			if rt := inst.inFlight.route(n.CallID); rt != nil && rt.ui != nil {
				rt.deliver(func() { rt.ui.Progress(n.Tail) })
				return
			}
		}
		fmt.Fprintf(p.opts.Log, "bridge: tool/progress for no running call: %s\n", params)
	case protocol.NotifyProviderDelta:
		var n protocol.ProviderDelta
		if json.Unmarshal(params, &n) == nil {
			if rt := inst.inFlight.route(n.StreamID); rt != nil && rt.deltas != nil {
				if rt.spend(len(params)) {
					rt.deliver(func() { rt.deltas(n.Event) })
				}
				return
			}
		}
		fmt.Fprintf(p.opts.Log, "bridge: provider/delta for no running stream: %s\n", params)
	case protocol.NotifyPluginDeclare:
		if len(params) > MaxDeclaration {
			p.notices.raise(Notice{Plugin: p.opts.Name, Level: "warn", Message: fmt.Sprintf("its new declaration was refused: it is %s, over the %s a declaration may be", size(len(params)), size(MaxDeclaration))})
			return
		}
		if protocol.KindOf(params) != "an object" {
			fmt.Fprintf(p.opts.Log, "bridge: plugin/declare is not a declaration (%s): %.512s\n", protocol.KindOf(params), params)
			return
		}
		p.declaredLive(params)
	default:
		fmt.Fprintf(p.opts.Log, "bridge: ignored notification %q\n", method)
	}
}

// serve answers one of the plugin's requests, on the wire's reader. A
// request may wait on a person (ask), so each is answered on its own
// goroutine and the reader goes on — unless MaxPluginRequests are being
// answered already: then the reader waits for one of them to finish (see
// MaxPluginRequests), or for the wire to go down.
func (inst *instance) serve(m *message) {
	p := inst.p
	id, err := idOf(m.ID)
	if err != nil {
		fmt.Fprintf(p.opts.Log, "bridge: ignored a request whose id is not a JSON-RPC id: %s %.512s\n", m.Method, m.ID)
		return
	}
	if m.Method != protocol.MethodServiceCall {
		inst.answer(id, nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound,
			Message: "the host answers only service/call, not " + m.Method})
		return
	}
	select {
	case inst.handlerSlots <- struct{}{}:
	case <-inst.done:
		return // there is no one to answer
	}
	if !inst.inFlight.startHandler(&inst.handlers) {
		<-inst.handlerSlots
		return
	}
	p.hold(inst, false)
	go func() {
		defer inst.handlers.Done()
		defer p.release(inst)
		defer func() { <-inst.handlerSlots }()
		res, err := p.serveService(inst, m.Params)
		if err != nil {
			inst.answer(id, nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: err.Error()})
			return
		}
		inst.answer(id, protocol.ServiceCallResult{Result: res}, nil)
	}()
}

// answer sends the answer to one of the plugin's requests: result, or rerr
// if it is not nil. An answer the plugin does not read is a write blocked
// like any other, and guarded like a notification: a plugin that stops
// reading while it floods the host with requests is killed as wedged.
// Answers are written one at a time, each guarded from its turn on: an
// answer waiting behind others is not the plugin failing to read, and it
// is the one being written that a plugin not reading blocks.
func (inst *instance) answer(id jsonrpc2.ID, result any, rerr *jsonrpc2.Error) {
	inst.answering.Lock()
	defer inst.answering.Unlock()
	_ = inst.guardWrite(inst.p.opts.Deadlines.Grace, "the answer to its request", func() error {
		return inst.wire.reply(id, result, rerr)
	})
}

// traceLine writes one wire line into the log (protocol.TraceLine).
func (p *Plugin) traceLine(dir string, line []byte) {
	protocol.TraceLine(p.opts.Log, p.opts.Clock.Now(), dir, line)
}
