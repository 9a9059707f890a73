package bridge

import (
	"context"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// route is a running tool call or provider stream: where its progress,
// questions and deltas go while it runs, and nowhere once it has ended.
type route struct {
	key      string // the callId or streamId
	ui       sdk.CallUI
	deltas   func(sdk.StreamEvent)
	activity chan struct{} // a delta arrived (resets the provider's idle deadline)
	over     chan struct{} // closed when the deltas pass the stream's cap
	ctx      context.Context
	cancel   context.CancelFunc // ends questions asked on this call

	mu    sync.Mutex
	ended bool  // the request has its answer: nothing more is delivered
	quiet bool  // the caller stopped listening (a cancelled stream)
	left  int64 // the bytes of deltas still allowed (a stream's cap)
}

// mute stops deliveries to a caller that has stopped listening.
func (rt *route) mute() {
	rt.mu.Lock()
	rt.quiet = true
	rt.mu.Unlock()
}

func (rt *route) muted() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.quiet
}

// spend counts a delta of n bytes (its params as they crossed the wire)
// against the stream's cap, and reports whether it may be delivered. The
// first delta past the cap mutes the route and closes over: nothing more
// reaches the caller, so a stream that never ends costs it at most the cap.
func (rt *route) spend(n int) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended || rt.quiet {
		return false
	}
	if int64(n) > rt.left {
		rt.quiet = true
		close(rt.over)
		return false
	}
	rt.left -= int64(n)
	return true
}

// deliver runs f unless the route has ended. Holding mu means no delivery
// can reach a caller after its Call has returned.
func (rt *route) deliver(f func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended || rt.quiet {
		return
	}
	f()
	if rt.activity != nil {
		select {
		case rt.activity <- struct{}{}:
		default:
		}
	}
}

// addRoute registers a request: under its wire id always, so its answer
// can end it, and under its callId or streamId when it has one, so what the
// plugin sends about it finds it. A request with neither gets no route.
func (inst *instance) addRoute(id jsonrpc2.ID, req proxy.Request) *route {
	key := req.CallID
	if key == "" {
		key = req.StreamID
	}
	if key == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(inst.ctx)
	rt := &route{key: key, ui: req.UI, deltas: req.Deltas, ctx: ctx, cancel: cancel}
	if req.Deltas != nil {
		rt.activity, rt.over = make(chan struct{}, 1), make(chan struct{})
		rt.left = int64(inst.p.opts.Limits.ProviderResponseMiB) << 20
	}
	inst.callsMu.Lock()
	inst.routes[key] = rt
	inst.byReq[id] = rt
	inst.callsMu.Unlock()
	return rt
}

// endRoute ends the route of the request with wire id id, if it has one.
// It is called when the answer arrives (on the reader goroutine, before the
// answer is delivered, so nothing the plugin sends after its answer reaches
// the finished call) and again when Call returns. Idempotent.
func (inst *instance) endRoute(id jsonrpc2.ID) {
	inst.callsMu.Lock()
	rt := inst.byReq[id]
	delete(inst.byReq, id)
	if rt != nil && inst.routes[rt.key] == rt {
		delete(inst.routes, rt.key)
	}
	inst.callsMu.Unlock()
	if rt == nil {
		return
	}
	rt.cancel()
	rt.mu.Lock()
	rt.ended = true
	rt.mu.Unlock()
}

// route is the running call or stream named id on inst, or nil.
func (inst *instance) route(id string) *route {
	inst.callsMu.Lock()
	defer inst.callsMu.Unlock()
	return inst.routes[id]
}
