package bridge

import (
	"context"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// route is a running tool call or provider stream: where its progress,
// questions and deltas go while it runs, and nowhere once it has ended.
type route struct {
	ui       sdk.CallUI
	deltas   func(sdk.StreamEvent)
	activity chan struct{} // a delta arrived (resets the provider's idle deadline)
	ctx      context.Context
	cancel   context.CancelFunc // ends questions asked on this call

	mu    sync.Mutex
	ended bool
}

// deliver runs f unless the route has ended. Holding mu means no delivery
// can reach a caller after its Call has returned.
func (rt *route) deliver(f func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended {
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

func (p *Plugin) addRoute(inst *instance, req proxy.Request) *route {
	id := req.CallID
	if id == "" {
		id = req.StreamID
	}
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(inst.ctx)
	rt := &route{ui: req.UI, deltas: req.Deltas, ctx: ctx, cancel: cancel}
	if req.Deltas != nil {
		rt.activity = make(chan struct{}, 1)
	}
	p.mu.Lock()
	p.routes[id] = rt
	p.mu.Unlock()
	return rt
}

func (p *Plugin) removeRoute(req proxy.Request, rt *route) {
	if rt != nil {
		p.endRoutes(req.CallID, req.StreamID)
	}
}

// endRoutes ends the running calls or streams named by ids (empty ids are
// ignored). Idempotent.
func (p *Plugin) endRoutes(ids ...string) {
	var ended []*route
	p.mu.Lock()
	for _, id := range ids {
		if rt := p.routes[id]; id != "" && rt != nil {
			delete(p.routes, id)
			ended = append(ended, rt)
		}
	}
	p.mu.Unlock()
	for _, rt := range ended {
		rt.cancel()
		rt.mu.Lock()
		rt.ended = true
		rt.mu.Unlock()
	}
}

// route is the running call or stream named id, or nil.
func (p *Plugin) route(id string) *route {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.routes[id]
}
