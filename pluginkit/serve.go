package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Serve answers the host on stdin and stdout until stdin ends (it returns
// nil), ctx is cancelled (it returns ctx's cause) or a handler calls
// Host.Exit (it returns that error). A Plugin that fails validation (a nil
// value, an empty or duplicate name, a service under the host's key) is
// refused before anything is read.
//
// Each request runs on a goroutine of its own (a kept worker when one is
// idle), so a slow tool never holds up another request or a cancel;
// notifications are handled in order on the reader. When the instance
// ends, every handler's ctx is cancelled, nothing more is written, and
// Serve waits for every handler before it returns.
//
// To end a read of stdin blocked when ctx is cancelled, Serve closes stdin
// if it is an io.Closer, and waits for that read; an *os.File is neither
// closed nor waited for, since closing it would not end the read and the
// process ends anyway (Main).
func (p *Plugin) Serve(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	x, err := newIndex(p)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	w := newWire(stdin, stdout)
	s := &server{p: p, x: x, w: w, lastObs: closed}
	s.workers = newWorkers(s.nextJob)
	s.host = &Host{s: s, done: ctx.Done(), exit: func(err error) {
		w.shut.Store(true) // before cancel: the caller's own answer must not go out
		cancel(err)
		s.end()
	}}
	s.ctx = context.WithValue(ctx, hostKey{}, s.host)
	s.base = s.ctx
	if _, ok := ctx.Deadline(); !ok {
		// A request's ctx hangs off a parent that is never cancelled, so
		// making one takes no lock and no entry in the instance's ctx:
		// the instance cancels the requests it runs itself (end).
		s.base = context.WithoutCancel(s.ctx)
	}
	s.workers.start()

	var result error
	select {
	case <-w.readDone:
		if !errors.Is(w.readErr, io.EOF) {
			result = fmt.Errorf("pluginkit: reading stdin: %w", w.readErr)
		}
		w.shut.Store(true) // before cancel: a handler ending with its ctx must not answer
		cancel(result)
	case <-ctx.Done():
		result = context.Cause(ctx)
	}
	w.shut.Store(true)
	s.end()
	s.host.close()
	w.closeStdin()
	s.workers.stop(w.canUnblock())
	return result
}

// closed is an already-closed channel: the observation before the first.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// server is one instance being served.
type server struct {
	p       *Plugin
	x       *index
	w       *wire
	workers *workers // reads, and runs every handler and observation
	host    *Host
	ctx     context.Context // the instance's: cancelled when it ends, carries host
	base    context.Context // the parent of every request's ctx: ctx, or ctx never cancelled

	mu       sync.Mutex
	ending   bool          // the instance is ending: start nothing more
	live     calls         // the requests being run, oldest first
	initDone chan struct{} // closed once initialize has run; nil before it arrives
	initErr  error         // why the handshake failed; written before initDone closes

	lastObs chan struct{} // closed when the latest observation is delivered; guarded by mu
}

// end begins the instance's end: nothing more starts, and every request
// running is cancelled with the instance's cause. Called once the
// instance's ctx is done (by Serve, and by Exit before it returns).
func (s *server) end() {
	cause := context.Cause(s.ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ending = true
	for c := s.live.first; c != nil; c = c.next {
		c.cancel(cause)
	}
}

// nextJob is the reader's work: it decodes each line once and routes it,
// until a line makes a job (a request, an observation) or stdin ends
// (nil). The only work done on the reader is deciding, a cancel, and
// handing the plugin's own calls their answers.
func (s *server) nextJob() job {
	for {
		m := &envelope{}
		if err := s.w.read(m); err != nil {
			s.w.readErr = err
			close(s.w.readDone)
			return nil
		}
		if j := s.route(m); j != nil {
			return j
		}
	}
}

// route hands one message on. Like sourcegraph/jsonrpc2, which the host
// speaks, it takes a message with a method as a request (a notification
// when its id is missing or null) and one with a result or an error as an
// answer; a message that is both, or neither, or whose id is not a string
// or an integer, is skipped.
// It returns the job the message makes, if it makes one.
func (s *server) route(m *envelope) job {
	isRequest := m.Method != nil
	isAnswer := len(m.Result) > 0 || !isNull(m.Error)
	if isRequest == isAnswer {
		return nil
	}
	if isAnswer {
		s.host.answered(m)
		return nil
	}
	id, notif, ok := requestID(m.ID)
	if !ok {
		return nil
	}
	if len(m.Params) == 0 {
		m.Params = json.RawMessage("null")
	}
	if notif {
		return s.notified(*m.Method, m.Params)
	}
	return s.request(id, m)
}

// notified handles a notification, in the order they arrived, returning
// the job it makes if it makes one.
func (s *server) notified(method string, raw json.RawMessage) job {
	switch method {
	case protocol.NotifyToolCancel:
		var c protocol.ToolCancel
		if json.Unmarshal(raw, &c) == nil {
			s.cancel(false, c.CallID)
		}
	case protocol.NotifyProviderCancel:
		var c protocol.ProviderCancel
		if json.Unmarshal(raw, &c) == nil {
			s.cancel(true, c.StreamID)
		}
	case protocol.NotifyHookObserve:
		var o protocol.HookObserve
		if json.Unmarshal(raw, &o) != nil || s.x.hooks[o.ID] == nil {
			return nil
		}
		// Observe is the plugin's code and may be slow, so it runs off
		// the reader; each waits for the one before, so a hook hears
		// about things in the order they happened.
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ending {
			return nil
		}
		ob := &observation{s: s, prev: s.lastObs, done: make(chan struct{}), o: o}
		s.lastObs = ob.done
		s.workers.jobs.Add(1)
		return ob
	}
	// Any other notification is one this kit does not know: nothing waits
	// on a notification, so it is dropped.
	return nil
}

// observation is one hook/observe being delivered.
type observation struct {
	s          *server
	prev, done chan struct{}
	o          protocol.HookObserve
}

func (ob *observation) work() {
	defer close(ob.done)
	<-ob.prev
	ob.s.x.hooks[ob.o.ID].Observe(ob.s.ctx, sdk.HookEvent{Site: ob.o.Site, Point: ob.o.Point, Payload: ob.o.Payload})
}

// reply answers request id with res, or with err as a JSON-RPC error: a
// *wireError as it is, any other error as InternalError with its message.
// A result that cannot be encoded is answered with that error instead.
func (s *server) reply(id json.RawMessage, res any, err error) {
	if err == nil {
		err = s.w.sendResult(id, res)
		if err == nil || errors.Is(err, errShut) || !isEncodeError(err) {
			return
		}
		err = fmt.Errorf("%s: the answer cannot be encoded: %w", s.p.Name, err)
	}
	var werr *wireError
	if !errors.As(err, &werr) {
		werr = &wireError{Code: codeInternalError, Message: err.Error()}
	}
	s.w.sendError(id, werr)
}

// isEncodeError reports whether err is encoding/json refusing a value
// rather than stdout failing.
func isEncodeError(err error) bool {
	var ue *json.UnsupportedValueError
	var ut *json.UnsupportedTypeError
	var me *json.MarshalerError
	return errors.As(err, &ue) || errors.As(err, &ut) || errors.As(err, &me)
}

func rpcError(code int64, format string, args ...any) *wireError {
	return &wireError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// prepared is a request with its params decoded, ready to run.
type prepared func(ctx context.Context) (any, error)

// handler is one method: prepare decodes its params, and says which key a
// cancel names it by. keyed methods are prepared on the reader.
type handler struct {
	prepare func(s *server, params json.RawMessage) (run prepared, key string, err error)
	keyed   bool
	// offered reports whether the plugin has anything the method serves;
	// nil is always. A method of a kind it has none of (hook/decide, to
	// a plugin with no hooks) is a method it does not have, which the
	// wire's contract answers with MethodNotFound (docs/plugins.md), not
	// with an unknown name.
	offered func(*index) bool
}

// offeredIf is h, offered only when has reports true.
func offeredIf(h handler, has func(*index) bool) handler {
	h.offered = has
	return h
}

// handle adapts a typed method to a handler, decoding its params once.
// key, if set, names the running request for its cancel notification.
func handle[P any](f func(s *server, ctx context.Context, p P) (any, error), key func(*P) string) handler {
	return handler{keyed: key != nil, prepare: func(s *server, raw json.RawMessage) (prepared, string, error) {
		var p P
		err := json.Unmarshal(raw, &p)
		k := ""
		if key != nil {
			// Even from params that failed to decode, as far as they
			// went: a cancel of that id still finds the call.
			k = key(&p)
		}
		if err != nil {
			return nil, k, s.badParams(err)
		}
		return func(ctx context.Context) (any, error) { return f(s, ctx, p) }, k, nil
	}}
}

// badParams is the refusal of params that did not decode, in the wire's
// terms: the worker whose JSON type is wrong ("args must be a string"), or
// params that are not an object. encoding/json's own text names Go types
// ("Go struct field CommandRunParams.args"), which mean nothing to a host,
// change with Go's releases, and could never be said alike by a plugin in
// another language.
func (s *server) badParams(err error) *wireError {
	why := err.Error()
	var te *json.UnmarshalTypeError
	switch {
	case !errors.As(err, &te):
	case te.Field != "":
		why = te.Field + " must be " + jsonKind(te.Type)
	case te.Value != "object":
		why = "params must be an object"
	}
	return rpcError(codeInvalidParams, "%s: bad params: %s", s.p.Name, why)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a " + t.String()
}

// lookup finds name among the plugin's values of one kind, or says it is
// not there in an error naming it.
func lookup[T any](s *server, m map[string]T, kind, name string) (T, error) {
	v, ok := m[name]
	if !ok {
		return v, rpcError(codeInvalidParams, "%s: no %s %q", s.p.Name, kind, name)
	}
	return v, nil
}

// nonNil keeps empty lists lists on the wire: the schema says array, and a
// null there would surprise a host in another language.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// handlerOf returns the handler of a method, if the kit answers it.
func handlerOf(method string) (handler, bool) {
	switch method {
	case protocol.MethodInitialize:
		return handlers.initialize, true
	case protocol.MethodToolCall:
		return toolCallHandler, true
	case protocol.MethodCommandRun:
		return handlers.commandRun, true
	case protocol.MethodCommandComplete:
		return handlers.commandComplete, true
	case protocol.MethodContextContribute:
		return handlers.contextContribute, true
	case protocol.MethodCompactorCompact:
		return handlers.compactorCompact, true
	case protocol.MethodProviderStream:
		return handlers.providerStream, true
	case protocol.MethodHookDecide:
		return handlers.hookDecide, true
	case protocol.MethodServiceCall:
		return handlers.serviceCall, true
	}
	return handler{}, false
}

// handlers are the requests a plugin answers but tool/call.
var handlers = struct {
	initialize, commandRun, commandComplete, contextContribute, compactorCompact, providerStream, hookDecide, serviceCall handler
}{
	initialize:        handle((*server).initialize, nil),
	commandRun:        offeredIf(handle((*server).commandRun, nil), hasCommands),
	commandComplete:   offeredIf(handle((*server).commandComplete, nil), hasCommands),
	contextContribute: offeredIf(handle((*server).contextContribute, nil), func(x *index) bool { return len(x.contributors) > 0 }),
	compactorCompact:  offeredIf(handle((*server).compactorCompact, nil), func(x *index) bool { return len(x.compactors) > 0 }),
	providerStream: offeredIf(handle((*server).providerStream, func(p *protocol.ProviderStreamParams) string { return p.StreamID }),
		func(x *index) bool { return len(x.providers) > 0 }),
	hookDecide:  offeredIf(handle((*server).hookDecide, nil), func(x *index) bool { return len(x.hooks) > 0 }),
	serviceCall: offeredIf(handle((*server).serviceCall, nil), func(x *index) bool { return len(x.services) > 0 }),
}

func hasCommands(x *index) bool { return len(x.commands) > 0 }

// toolCallHandler is handle's for tool/call, with its params decoded
// without reflection when they are plain (scan.go). The reader usually
// decodes them with the line already (envelope.toolCall).
var toolCallHandler = handler{keyed: true, offered: func(x *index) bool { return len(x.tools) > 0 }, prepare: func(s *server, raw json.RawMessage) (prepared, string, error) {
	var p protocol.ToolCallParams
	err := toolCallParams(raw, &p)
	if err != nil {
		return nil, p.CallID, s.badParams(err)
	}
	return func(ctx context.Context) (any, error) { return s.toolCall(ctx, p) }, p.CallID, nil
}}

func (s *server) initialize(ctx context.Context, p protocol.InitializeParams) (any, error) {
	var err error
	if s.p.Initialize != nil {
		err = s.p.Initialize(ctx, p)
	}
	if err != nil {
		err = fmt.Errorf("%s: initialize: %w", s.p.Name, err)
	}
	if err != nil {
		return nil, err
	}
	return s.x.decl, nil
}

func (s *server) toolCall(ctx context.Context, p protocol.ToolCallParams) (any, error) {
	t, err := lookup(s, s.x.tools, "tool", p.Name)
	if err != nil {
		return nil, err
	}
	ui := &callUI{s: s, callID: p.CallID}
	out, err := t.Call(ctx, sdk.ToolCall{ID: p.CallID, Name: p.Name, Input: p.Input, Cwd: p.Cwd, Session: p.Session, Turn: p.Turn}, ui)
	ui.end()
	if err != nil {
		return nil, err
	}
	out.Parts = nonNil(out.Parts)
	return protocol.ToolCallResult{Output: out}, nil
}

func (s *server) commandRun(ctx context.Context, p protocol.CommandRunParams) (any, error) {
	c, err := lookup(s, s.x.commands, "command", p.Name)
	if err != nil {
		return nil, err
	}
	out, err := c.Run(ctx, sdk.CommandRun(p))
	if err != nil {
		return nil, err
	}
	return protocol.CommandRunResult{Outcome: out}, nil
}

func (s *server) commandComplete(ctx context.Context, p protocol.CommandCompleteParams) (any, error) {
	c, err := lookup(s, s.x.commands, "command", p.Name)
	if err != nil {
		return nil, err
	}
	cs, err := c.Complete(ctx, sdk.CompleteRequest(p))
	if err != nil {
		return nil, err
	}
	return protocol.CommandCompleteResult{Completions: nonNil(cs)}, nil
}

func (s *server) contextContribute(ctx context.Context, p protocol.ContextContributeParams) (any, error) {
	c, err := lookup(s, s.x.contributors, "contributor", p.ID)
	if err != nil {
		return nil, err
	}
	pieces, err := c.Contribute(ctx, p.Query)
	if err != nil {
		return nil, err
	}
	return protocol.ContextContributeResult{Pieces: nonNil(pieces)}, nil
}

func (s *server) compactorCompact(ctx context.Context, p protocol.CompactorCompactParams) (any, error) {
	c, err := lookup(s, s.x.compactors, "compactor", p.ID)
	if err != nil {
		return nil, err
	}
	out, err := c.Compact(ctx, sdk.CompactRequest{Context: p.Context, Reason: p.Reason})
	if err != nil {
		return nil, err
	}
	out.Messages = nonNil(out.Messages)
	return protocol.CompactorCompactResult{Compaction: out}, nil
}

func (s *server) providerStream(ctx context.Context, p protocol.ProviderStreamParams) (any, error) {
	pr, err := lookup(s, s.x.providers, "provider", p.ID)
	if err != nil {
		return nil, err
	}
	e := &emitter{s: s, streamID: p.StreamID}
	end, err := pr.Stream(ctx, p.Request, e.emit)
	e.end()
	if err != nil {
		return nil, err
	}
	return protocol.ProviderStreamResult{End: end}, nil
}

func (s *server) hookDecide(ctx context.Context, p protocol.HookDecideParams) (any, error) {
	h, err := lookup(s, s.x.hooks, "hook", p.ID)
	if err != nil {
		return nil, err
	}
	d, err := h.Decide(ctx, sdk.HookEvent{Site: p.Site, Point: p.Point, Payload: p.Payload})
	if err != nil {
		return nil, err
	}
	return protocol.HookDecideResult(d), nil
}

func (s *server) serviceCall(ctx context.Context, p protocol.ServiceCallParams) (any, error) {
	svc, err := lookup(s, s.x.services, "service", p.Key)
	if err != nil {
		return nil, err
	}
	res, err := svc.Call(ctx, p.Method, p.Params)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		res = json.RawMessage("null")
	}
	return protocol.ServiceCallResult{Result: res}, nil
}

// callUI is the sdk.CallUI of one tool call. Progress after the call has
// answered is dropped: the host reads a progress line as belonging to a
// running call, so none may follow the answer.
type callUI struct {
	s      *server
	callID string
	mu     sync.Mutex
	over   bool
}

func (u *callUI) Progress(tail string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.over {
		u.s.w.sendProgress(protocol.ToolProgress{CallID: u.callID, Tail: tail})
	}
}

func (u *callUI) Ask(ctx context.Context, question string) (string, error) {
	var res protocol.AskResult
	err := u.s.host.Call(ctx, protocol.HostServiceKey, protocol.HostAsk, protocol.AskParams{Call: u.callID, Question: question}, &res)
	return res.Answer, err
}

func (u *callUI) end() {
	u.mu.Lock()
	u.over = true
	u.mu.Unlock()
}

// emitter sends one stream's deltas in the order emit is called, all
// before the request's result; an emit after Stream returned is dropped.
type emitter struct {
	s        *server
	streamID string
	mu       sync.Mutex
	over     bool
}

func (e *emitter) emit(ev sdk.StreamEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.over {
		e.s.w.send(notifyMsg{JSONRPC: "2.0", Method: protocol.NotifyProviderDelta, Params: protocol.ProviderDelta{StreamID: e.streamID, Event: ev}})
	}
}

func (e *emitter) end() {
	e.mu.Lock()
	e.over = true
	e.mu.Unlock()
}
