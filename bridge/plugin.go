package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Plugin is one plugin as the host sees it: its declaration, and at most one
// live instance reached through its transport. It satisfies proxy.Caller,
// so every proxy of the plugin sends through it. It is safe for concurrent
// use.
type Plugin struct {
	opts Options

	nextStream atomic.Uint64
	nextReq    atomic.Uint64 // names the host's requests, so an answer finds its route
	// Goroutines that outlive the call that started them (a respawn, an
	// idle stop, a wedge); Close waits for them.
	watchers sync.WaitGroup
	notices  noticeLimiter // the plugin's own notices
	// life ends at Close: every start runs under it, so Close cancels a
	// handshake in flight instead of waiting it out.
	life context.Context
	end  context.CancelFunc

	mu      sync.Mutex
	sup     supervisor
	decl    *protocol.InitializeResult
	refused []string // what the handshake that gave decl refused
	failed  int      // restarts failed since the last death
}

// lifecycle is where a Plugin is in its life.
type lifecycle int

const (
	notStarted lifecycle = iota // no declaration: Start has not succeeded
	idle                        // declared (Options.Declared, or stopped for idleness), nothing running, no death to say so: a read starts it
	starting                    // a start in flight (Plugin.start), which reads wait for
	running                     // Plugin.inst is the live instance
	dead                        // its instance died or a restart failed: a read past retryAt respawns it
	closed                      // Close was called: nothing starts again
)

// String is the state as Status says it.
func (s lifecycle) String() string {
	return [...]string{"not started", "idle", "starting", "running", "dead", "closed"}[s]
}

// moves lists the states each state may move to.
var moves = [...][]lifecycle{
	notStarted: {starting, closed},
	idle:       {starting, closed},
	starting:   {notStarted, idle, running, dead, closed},
	running:    {idle, dead, closed},
	dead:       {starting, closed},
	closed:     nil,
}

// supervisor is where the plugin stands in its life, with what goes with
// it: running holds its live instance and starting its start in flight,
// and no other state holds either, so a plugin running without an
// instance cannot be written. It changes only through its methods, under
// Plugin.mu, and only by a move its state allows (moves).
type supervisor struct {
	name  string
	state lifecycle
	inst  *instance // the live instance: set exactly while running
	start *startup  // the start in flight: set exactly while starting
	// backoff spaces the respawns that follow deaths.
	backoff backoff
	moved   chan struct{} // closed at the next move, while someone watches
}

// watch is closed at the next move: what a watcher of the state (a test)
// waits on instead of polling Status.
func (s *supervisor) watch() <-chan struct{} {
	if s.moved == nil {
		s.moved = make(chan struct{})
	}
	return s.moved
}

// to moves to s, dropping the instance or start of the state it leaves.
func (s *supervisor) to(next lifecycle) {
	if !slices.Contains(moves[s.state], next) {
		panic(fmt.Sprintf("bridge: plugin %s cannot go from %s to %s", s.name, s.state, next))
	}
	s.state, s.inst, s.start = next, nil, nil
	if s.moved != nil {
		close(s.moved)
		s.moved = nil
	}
}

// move moves to a state that holds nothing: not running or starting.
func (s *supervisor) move(next lifecycle) {
	if next == running || next == starting {
		panic(fmt.Sprintf("bridge: plugin %s cannot be %s without what goes with it", s.name, next))
	}
	s.to(next)
}

// run makes inst the live instance.
func (s *supervisor) run(inst *instance) {
	s.to(running)
	s.inst = inst
}

// begin makes st the start in flight.
func (s *supervisor) begin(st *startup) {
	s.to(starting)
	s.start = st
}

// startup is a start in flight: the reads that come meanwhile wait for it.
type startup struct {
	from lifecycle     // notStarted, idle or dead
	done chan struct{} // closed once inst or err is set
	inst *instance
	err  error
}

// beginStart moves the plugin to starting and returns the start. Called
// with p.mu held.
func (p *Plugin) beginStart() *startup {
	st := &startup{from: p.sup.state, done: make(chan struct{})}
	p.sup.begin(st)
	return st
}

func (st *startup) finish(inst *instance, err error) {
	st.inst, st.err = inst, err
	close(st.done)
}

// New returns a plugin that has not started. Call Start.
func New(opts Options) *Plugin {
	opts.Deadlines = opts.Deadlines.WithDefaults()
	opts.Limits = opts.Limits.WithDefaults()
	opts.Backoff = opts.Backoff.withDefaults()
	if opts.Raise == nil {
		opts.Raise = func(Notice) {}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	p := &Plugin{opts: opts, sup: supervisor{name: opts.Name, backoff: backoff{policy: opts.Backoff}}}
	p.notices.p = p
	p.life, p.end = context.WithCancel(context.Background())
	if opts.Declared != nil {
		decl := *opts.Declared
		p.decl, p.sup.state = &decl, idle
	}
	return p
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.opts.Name }

// Kind names the plugin's transport.
func (p *Plugin) Kind() string { return p.opts.Transport.Kind() }

// Start launches the first instance and performs the handshake, under ctx
// and until Close. On error the plugin contributes nothing; the error says
// why in one line. What the declaration held that the host refused costs a
// notice each (see readDeclaration); the declaration returned is what was
// kept.
func (p *Plugin) Start(ctx context.Context) (protocol.InitializeResult, error) {
	p.mu.Lock()
	var st *startup
	switch p.sup.state {
	case notStarted, idle:
		st = p.beginStart()
	case closed:
		p.mu.Unlock()
		return protocol.InitializeResult{}, ErrClosed
	default:
		p.mu.Unlock()
		return protocol.InitializeResult{}, fmt.Errorf("plugin %s is %s already", p.opts.Name, p.sup.state)
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(p.life, cancel)()
	defer cancel()
	inst, decl, refused, err := p.spawn(ctx)
	if err == nil {
		_, err = p.install(inst)
	}
	if err != nil {
		p.mu.Lock()
		if p.sup.state == starting {
			p.sup.move(st.from) // a first start that fails is no death
		}
		p.mu.Unlock()
		st.finish(nil, err)
		return protocol.InitializeResult{}, err
	}
	p.declaredAtHandshake(decl, refused)
	st.finish(inst, nil)
	return decl, nil
}

// install makes inst, just through its handshake, the live instance. It
// returns how many restarts had failed before it, and counts them off. It
// refuses, and stops inst, when the plugin was closed meanwhile
// (ErrClosed) or inst has already ended: it died before anyone could use
// it, which is a failed start — its death is no death of a live instance,
// and says nothing.
func (p *Plugin) install(inst *instance) (failed int, err error) {
	p.mu.Lock()
	switch {
	case p.sup.state == closed:
		err = ErrClosed
	case inst.ended():
		err = fmt.Errorf("exited right after the handshake (%v); see %s", inst.waitReason(), p.logName())
	default:
		failed, p.failed = p.failed, 0
		inst.live = true
		p.sup.run(inst)
		p.armIdle(inst)
	}
	p.mu.Unlock()
	if err != nil {
		p.stopQuietly(inst)
	}
	return failed, err
}

// logName is the plugin's log for a message that sends the person to it:
// "its log (<path>)", or "its log" where the path is not known.
func (p *Plugin) logName() string {
	if p.opts.LogPath == "" {
		return "its log"
	}
	return "its log (" + p.opts.LogPath + ")"
}

// Status is "running", "starting", "idle" (declared, but not running: the
// next read starts it), "dead" (will respawn on a read), "not started" or
// "closed".
func (p *Plugin) Status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sup.state.String()
}

// ErrClosed is the error of a call on a closed Plugin.
var ErrClosed = errors.New("plugin closed")

// Close stops the live instance (stdin closed first, so a well-behaved
// plugin exits on its own), cancels a start in flight, and waits for
// everything the plugin started. Its error says what it could not do:
// close the instance's stdin, or kill it.
func (p *Plugin) Close() error {
	p.mu.Lock()
	inst := p.sup.inst
	if p.sup.state != closed {
		p.sup.move(closed)
	}
	if inst != nil && inst.idleStop != nil {
		inst.idleStop.Stop()
	}
	p.mu.Unlock()
	p.end()
	var err error
	if inst != nil {
		select {
		case <-inst.done:
			// It died before we closed it: that death keeps its notice.
			<-inst.dead
		default:
			err = inst.stop()
		}
	}
	p.watchers.Wait() // a respawn cancelled by p.end stops what it started
	p.notices.close()
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.opts.Name, err)
	}
	return nil
}

// stopQuietly stops inst for no caller that would hear what its stop could
// not do (a failed start, an idle stop): that goes to the plugin's log.
func (p *Plugin) stopQuietly(inst *instance) {
	if err := inst.stop(); err != nil {
		fmt.Fprintf(p.opts.Log, "bridge: stopping an instance: %v\n", err)
	}
}

// spawn starts an instance and performs the handshake. It returns the
// declaration as the host kept it and what it refused (readDeclaration).
func (p *Plugin) spawn(ctx context.Context) (*instance, protocol.InitializeResult, []string, error) {
	var decl protocol.InitializeResult
	var refused []string
	conn, err := p.opts.Transport.Start(ctx)
	if err != nil {
		if p.life.Err() != nil {
			return nil, decl, nil, ErrClosed
		}
		return nil, decl, nil, fmt.Errorf("start: %w", err)
	}
	inst := p.newInstance(conn)
	var answer json.RawMessage
	err = inst.handshake(ctx, &answer)
	switch {
	case errors.Is(err, errOverCap):
		err = fmt.Errorf("sent a line over %s before its declaration was read, the most a declaration may be", size(MaxDeclaration))
	case errors.Is(err, errPastDeadline) || errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no answer to initialize within %s (deadlines.initialize)", p.opts.Deadlines.Initialize)
	case gone(err):
		p.stopQuietly(inst) // so the reason is the exit's, not just "closed its stdout"
		err = fmt.Errorf("exited during the handshake (%v); see %s", inst.waitReason(), p.logName())
	case err != nil:
		err = fmt.Errorf("initialize failed: %w", err)
	default:
		if err = p.opts.Budget.Take(p.opts.Name, len(answer)); err == nil {
			decl, refused, err = readDeclaration(p.opts.Name, answer)
		}
	}
	if err != nil {
		p.stopQuietly(inst)
		if p.life.Err() != nil {
			err = ErrClosed // Close cancelled it
		}
		return nil, decl, nil, err
	}
	return inst, decl, refused, nil
}

// acquire returns the live instance, starting one if there is none, and
// holds it for the read (see hold): the caller releases it. It starts
// again when an instance it started was stopped for idleness before the
// read could hold it. started says the read waited for an idle plugin to
// start: that wait is the handshake's, not the read's.
func (p *Plugin) acquire(ctx context.Context, bound time.Duration) (inst *instance, started bool, err error) {
	for {
		inst, started, err = p.current(ctx, bound)
		if err != nil || p.hold(inst, true) {
			return inst, started, err
		}
	}
}

// current returns the live instance, respawning a dead one unless the
// backoff says not yet. Concurrent reads share one start. A reader waits
// for the start no longer than its own bound (its request's deadline) or
// its context; the start itself goes on, bounded by the handshake
// deadline, and serves the next read. A start that follows no death had
// been put off by the host, not lost to a death: a read waits for it as
// long as the handshake may take, as it would have at the host's start.
func (p *Plugin) current(ctx context.Context, bound time.Duration) (inst *instance, started bool, err error) {
	p.mu.Lock()
	st := p.sup.start
	switch p.sup.state {
	case closed:
		p.mu.Unlock()
		return nil, false, ErrClosed
	case running:
		inst = p.sup.inst
		p.mu.Unlock()
		return inst, false, nil
	case notStarted:
		p.mu.Unlock()
		return nil, false, fmt.Errorf("plugin %s did not start: %w", p.opts.Name, sdk.ErrUnavailable)
	case dead:
		if wait := p.sup.backoff.wait(p.opts.Clock.Now()); wait > 0 {
			p.mu.Unlock()
			return nil, false, fmt.Errorf("plugin %s is down; next restart in %s: %w", p.opts.Name, wait.Round(time.Millisecond), sdk.ErrUnavailable)
		}
		fallthrough
	case idle:
		st = p.beginStart()
		p.watchers.Add(1)
		go p.respawn(st)
	}
	p.mu.Unlock()
	if st.from != dead {
		bound, started = max(bound, p.opts.Deadlines.Initialize), true
	}
	timer := p.opts.Clock.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-st.done:
		switch {
		case errors.Is(st.err, ErrClosed):
			return nil, started, ErrClosed
		case st.err != nil:
			return nil, started, fmt.Errorf("plugin %s: %w: %w", p.opts.Name, st.err, sdk.ErrUnavailable)
		}
		return st.inst, started, nil
	case <-ctx.Done():
		return nil, started, fmt.Errorf("plugin %s is restarting: %w", p.opts.Name, ctx.Err())
	case <-timer.C():
		return nil, started, fmt.Errorf("plugin %s is still restarting after %s: %w", p.opts.Name, bound, sdk.ErrUnavailable)
	}
}

// respawn runs the start st for current, until Close. A failed restart is
// part of the death it follows, which has had its notice: it says why in
// the plugin's log and in the error of the reads that waited, and backs
// off like a death. Coming back after failed restarts is the death's
// second and last notice. A start that follows no death (a cached
// declaration's first, or one after an idle stop) has had no notice: if
// it fails, it is the one notice, and from then on a death like any other.
func (p *Plugin) respawn(st *startup) {
	defer p.watchers.Done()
	inst, decl, refused, err := p.spawn(p.life)
	var failed int
	if err == nil {
		failed, err = p.install(inst)
	}
	switch {
	case errors.Is(err, ErrClosed):
	case err != nil:
		p.mu.Lock()
		p.sup.backoff.died(p.opts.Clock.Now(), 0)
		p.failed++
		if p.sup.state == starting {
			p.sup.move(dead)
		}
		p.mu.Unlock()
		fmt.Fprintf(p.opts.Log, "bridge: restart failed: %v\n", err)
		if st.from == idle {
			p.opts.Raise(Notice{Plugin: p.opts.Name, Level: "error",
				Message: "could not start: " + err.Error() + "; its contributions answer nothing until a later use starts it"})
		}
	default:
		if failed > 0 {
			p.opts.Raise(Notice{Plugin: p.opts.Name, Level: "info", Message: fmt.Sprintf("running again; failed restarts before this one: %d", failed)})
		}
		p.declaredAtHandshake(decl, refused)
	}
	st.finish(inst, err)
}

// died records an instance's end and raises its one notice. An instance
// that never went live raises none: its failed start says why.
func (p *Plugin) died(inst *instance, why error) {
	p.mu.Lock()
	if inst.idleStop != nil {
		inst.idleStop.Stop()
	}
	wasLive := inst.live
	current := p.sup.inst == inst
	if current {
		p.sup.move(dead)
		now := p.opts.Clock.Now()
		p.sup.backoff.died(now, now.Sub(inst.started))
	}
	p.mu.Unlock()
	if !wasLive {
		return
	}
	msg := "stopped"
	if why != nil {
		msg += " (" + why.Error() + ")"
	}
	inst.claimNotice(&Notice{Plugin: p.opts.Name, Level: "warn", Message: msg + "; its contributions answer nothing until the next use restarts it; see " + p.logName()})
}

// Notify implements proxy.Caller. A dead plugin is not respawned for a
// notification: nothing waits on it, so nothing is lost. An idle one is
// started: it declared it wants to hear this (a hook's observation), and
// it is idle only because the host had not needed it yet.
func (p *Plugin) Notify(ctx context.Context, method string, params any) error {
	p.mu.Lock()
	inst := p.sup.inst
	wake := p.sup.state == idle || p.sup.state == starting && p.sup.start.from == idle
	p.mu.Unlock()
	if wake {
		var err error
		if inst, _, err = p.acquire(ctx, p.opts.Deadlines.Initialize); err != nil {
			return err
		}
		defer p.release(inst)
	}
	if inst == nil {
		return fmt.Errorf("plugin %s: %w", p.opts.Name, sdk.ErrUnavailable)
	}
	return inst.notify(method, params)
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
