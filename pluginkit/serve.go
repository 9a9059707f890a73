package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Serve answers the host on stdin and stdout until stdin ends (it returns
// nil), ctx is cancelled (it returns ctx's cause) or a handler calls
// Host.Exit (it returns that error). A Plugin that fails validation (a nil
// value, an empty or duplicate name, a service under the host's key) is
// refused before anything is read.
//
// Each request runs on its own goroutine, so a slow tool never holds up a
// cancel; notifications are handled in order on the reader. When the
// instance ends, every handler's ctx is cancelled, nothing more is written,
// and Serve waits for every handler before it returns.
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
	s := &server{p: p, x: x, w: w, calls: map[string]*running{}, lastObs: closed}
	s.host = &Host{done: ctx.Done(), exit: func(err error) {
		w.shut.Store(true) // before cancel: the caller's own answer must not go out
		cancel(err)
	}}
	s.ctx = context.WithValue(ctx, hostKey{}, s.host)
	s.host.conn = jsonrpc2.NewConn(s.ctx, w, s, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	close(w.start)

	var result error
	select {
	case <-w.readDone:
		if !errors.Is(w.readErr, io.EOF) {
			result = fmt.Errorf("pluginkit: reading stdin: %w", w.readErr)
		}
		cancel(result)
	case <-ctx.Done():
		result = context.Cause(ctx)
	}
	w.shut.Store(true)
	s.mu.Lock()
	s.ending = true // no handler starts after this
	s.mu.Unlock()
	s.host.conn.Close()
	s.wg.Wait()
	if w.canUnblock() {
		<-w.readDone
	}
	return result
}

// closed is an already-closed channel: the observation before the first.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// server is one instance being served: the jsonrpc2 Handler.
type server struct {
	p    *Plugin
	x    *index
	w    *wire
	host *Host
	ctx  context.Context // the instance's: cancelled when it ends, carries host

	mu       sync.Mutex
	ending   bool                // the instance is ending: start nothing more
	calls    map[string]*running // running tool calls and streams, by "tool/"+callId or "stream/"+streamId
	initDone chan struct{}       // closed once initialize has run; nil before it arrives
	initErr  error               // why the handshake failed; written before initDone closes
	wg       sync.WaitGroup      // every handler and observation

	lastObs chan struct{} // closed when the latest observation is delivered; guarded by mu
}

// Handle implements jsonrpc2.Handler. It runs on jsonrpc2's reader
// goroutine, so it only decides and starts: requests run on their own
// goroutines, and the only inline work is a cancel.
func (s *server) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		s.notified(req)
		return
	}
	var ids struct {
		CallID   string `json:"callId"`
		StreamID string `json:"streamId"`
	}
	key := ""
	switch req.Method {
	case protocol.MethodToolCall, protocol.MethodProviderStream:
		if req.Params != nil {
			json.Unmarshal(*req.Params, &ids) // a bad params is reported by the handler itself
		}
		key = "tool/" + ids.CallID
		if req.Method == protocol.MethodProviderStream {
			key = "stream/" + ids.StreamID
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending {
		return
	}
	if req.Method == protocol.MethodInitialize {
		if s.initDone != nil {
			s.wg.Go(func() {
				s.reply(conn, req, nil, rpcError(jsonrpc2.CodeInvalidRequest, "%s: already initialized", s.p.Name))
			})
			return
		}
		s.initDone = make(chan struct{})
	} else if s.initDone == nil {
		s.wg.Go(func() {
			s.reply(conn, req, nil, rpcError(jsonrpc2.CodeInvalidRequest, "%s: %s before initialize", s.p.Name, req.Method))
		})
		return
	}
	initDone := s.initDone
	ctx, cancel := context.WithCancel(s.ctx)
	r := &running{cancel: cancel}
	if key != "" {
		// Registered here, on the reader, so a cancel read after this
		// request always finds it.
		s.calls[key] = r
	}
	s.wg.Go(func() {
		defer cancel()
		var res any
		var err error
		if req.Method == protocol.MethodInitialize {
			res, err = s.dispatch(ctx, req)
			s.initErr = err
			close(initDone)
		} else {
			// A request pipelined behind the handshake waits for it, or
			// for the instance's end (not its own cancel: a cancelled
			// tool still runs, and answers as it sees fit).
			select {
			case <-initDone:
			case <-s.ctx.Done():
			}
			switch {
			case s.ctx.Err() != nil:
				err = s.ctx.Err() // never written: the instance is ending
			case s.initErr != nil:
				err = rpcError(jsonrpc2.CodeInvalidRequest, "the handshake failed: %v", s.initErr)
			default:
				res, err = s.dispatch(ctx, req)
			}
		}
		if key != "" {
			s.mu.Lock()
			if s.calls[key] == r {
				delete(s.calls, key)
			}
			s.mu.Unlock()
		}
		s.reply(conn, req, res, err)
	})
}

// running is one cancellable request in server.calls.
type running struct{ cancel context.CancelFunc }

// notified handles a notification, in the order they arrived.
func (s *server) notified(req *jsonrpc2.Request) {
	raw := json.RawMessage("null")
	if req.Params != nil {
		raw = *req.Params
	}
	switch req.Method {
	case protocol.NotifyToolCancel:
		var c protocol.ToolCancel
		if json.Unmarshal(raw, &c) == nil {
			s.cancel("tool/" + c.CallID)
		}
	case protocol.NotifyProviderCancel:
		var c protocol.ProviderCancel
		if json.Unmarshal(raw, &c) == nil {
			s.cancel("stream/" + c.StreamID)
		}
	case protocol.NotifyHookObserve:
		var o protocol.HookObserve
		if json.Unmarshal(raw, &o) != nil || s.x.hooks[o.ID] == nil {
			return
		}
		// Observe is the plugin's code and may be slow, so it runs off
		// the reader; each waits for the one before, so a hook hears
		// about things in the order they happened.
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ending {
			return
		}
		prev, done := s.lastObs, make(chan struct{})
		s.lastObs = done
		s.wg.Go(func() {
			defer close(done)
			<-prev
			s.x.hooks[o.ID].Observe(s.ctx, sdk.HookEvent{Site: o.Site, Point: o.Point, Payload: o.Payload})
		})
	}
	// Any other notification is one this kit does not know: nothing waits
	// on a notification, so it is dropped.
}

func (s *server) cancel(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.calls[key]; r != nil {
		r.cancel()
	}
}

func (s *server) reply(conn *jsonrpc2.Conn, req *jsonrpc2.Request, res any, err error) {
	if err == nil {
		conn.Reply(s.ctx, req.ID, res)
		return
	}
	var rerr *jsonrpc2.Error
	if !errors.As(err, &rerr) {
		rerr = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
	}
	conn.ReplyWithError(s.ctx, req.ID, rerr)
}

func rpcError(code int64, format string, args ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// dispatch runs one request to its result.
func (s *server) dispatch(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	raw := json.RawMessage("null")
	if req.Params != nil {
		raw = *req.Params
	}
	h := handlers[req.Method]
	if h == nil {
		return nil, rpcError(jsonrpc2.CodeMethodNotFound, "%s: no method %q", s.p.Name, req.Method)
	}
	return h(s, ctx, raw)
}

type handler func(s *server, ctx context.Context, params json.RawMessage) (any, error)

// handle adapts a typed method to a handler, decoding its params.
func handle[P any](f func(s *server, ctx context.Context, p P) (any, error)) handler {
	return func(s *server, ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, rpcError(jsonrpc2.CodeInvalidParams, "%s: bad params: %v", s.p.Name, err)
		}
		return f(s, ctx, p)
	}
}

// lookup finds name among the plugin's values of one kind, or says it is
// not there in an error naming it.
func lookup[T any](s *server, m map[string]T, kind, name string) (T, error) {
	v, ok := m[name]
	if !ok {
		return v, rpcError(jsonrpc2.CodeInvalidParams, "%s: no %s %q", s.p.Name, kind, name)
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

// handlers are the requests a plugin answers, by method.
var handlers = map[string]handler{
	protocol.MethodInitialize:        handle((*server).initialize),
	protocol.MethodToolCall:          handle((*server).toolCall),
	protocol.MethodCommandRun:        handle((*server).commandRun),
	protocol.MethodCommandComplete:   handle((*server).commandComplete),
	protocol.MethodContextContribute: handle((*server).contextContribute),
	protocol.MethodCompactorCompact:  handle((*server).compactorCompact),
	protocol.MethodProviderStream:    handle((*server).providerStream),
	protocol.MethodHookDecide:        handle((*server).hookDecide),
	protocol.MethodServiceCall:       handle((*server).serviceCall),
}

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
		u.s.host.conn.Notify(u.s.ctx, protocol.NotifyToolProgress, protocol.ToolProgress{CallID: u.callID, Tail: tail})
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
		e.s.host.conn.Notify(e.s.ctx, protocol.NotifyProviderDelta, protocol.ProviderDelta{StreamID: e.streamID, Event: ev})
	}
}

func (e *emitter) end() {
	e.mu.Lock()
	e.over = true
	e.mu.Unlock()
}
