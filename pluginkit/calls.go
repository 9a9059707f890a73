package pluginkit

import (
	"context"
	"encoding/json"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// call is one request being served, from the line it came on to its
// answer: one allocation holding everything the reader decided and the
// worker needs, so starting a request makes no closures and takes no map.
type call struct {
	s      *server
	id     json.RawMessage // echoed in the answer
	method string
	params json.RawMessage
	h      handler
	known  bool // h is the method's handler, and the plugin has what it serves

	tool    protocol.ToolCallParams // a tool call's params, decoded with its line
	hasTool bool
	run     prepared // prepared on the reader (keyed methods), or nil
	perr    error    // why preparing failed

	// A tool call or a stream is keyed: a cancel notification names it by
	// key (a callId, or a streamId for a stream). A later call under the
	// same key shadows an earlier one, which no cancel finds any more.
	keyed, stream, shadowed bool
	key                     string

	refuse   *wireError // answered at once, without running
	initDone chan struct{}
	ctx      context.Context
	cancel   context.CancelCauseFunc

	prev, next *call // in server.live
}

// calls is a list of the requests being run, oldest first: linking and
// unlinking a request, done for every one, takes no hashing; a cancel,
// which is rare, walks it.
type calls struct{ first, last *call }

func (l *calls) push(c *call) {
	c.prev, c.next = l.last, nil
	if l.last != nil {
		l.last.next = c
	} else {
		l.first = c
	}
	l.last = c
}

func (l *calls) remove(c *call) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.first == c {
		l.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else if l.last == c {
		l.last = c.prev
	}
	c.prev, c.next = nil, nil
}

// request starts one request. The params of a tool call or a stream are
// decoded here, on the reader, since the call must be registered under its
// key before the next line (perhaps its cancel) is read; a tool call's
// usually were, with the line. The others' are decoded by the worker that
// runs them. Either way, once.
func (s *server) request(id json.RawMessage, m *envelope) job {
	c := &call{s: s, id: id, method: *m.Method, params: m.Params}
	c.h, c.known = handlerOf(c.method)
	c.known = c.known && (c.h.offered == nil || c.h.offered(s.x))
	switch {
	case m.toolCall:
		c.tool, c.hasTool, c.keyed, c.key = m.tool, true, true, m.tool.CallID
	case c.h.keyed:
		c.run, c.key, c.perr = c.h.prepare(s, c.params)
		c.keyed, c.stream = true, c.method == protocol.MethodProviderStream
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending {
		return nil
	}
	s.workers.jobs.Add(1)
	if c.method == protocol.MethodInitialize {
		if s.initDone != nil {
			c.refuse = rpcError(codeInvalidRequest, "%s: already initialized", s.p.Name)
			return c
		}
		s.initDone = make(chan struct{})
	} else if s.initDone == nil {
		c.refuse = rpcError(codeInvalidRequest, "%s: %s before initialize", s.p.Name, c.method)
		return c
	}
	c.initDone = s.initDone
	c.ctx, c.cancel = context.WithCancelCause(s.base)
	if c.keyed {
		// Registered here, on the reader, so a cancel read after this
		// request always finds it.
		for o := s.live.first; o != nil; o = o.next {
			if o.keyed && o.stream == c.stream && o.key == c.key {
				o.shadowed = true
			}
		}
	}
	s.live.push(c)
	return c
}

// cancel cancels the running tool call (or stream) named key.
func (s *server) cancel(stream bool, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := s.live.first; c != nil; c = c.next {
		if c.keyed && !c.shadowed && c.stream == stream && c.key == key {
			c.cancel(nil)
		}
	}
}

// work runs the request to its answer, on a worker.
func (c *call) work() {
	s := c.s
	if c.refuse != nil {
		s.reply(c.id, nil, c.refuse)
		return
	}
	defer c.cancel(nil)
	var res any
	var err error
	if c.method == protocol.MethodInitialize {
		res, err = c.dispatch()
		s.initErr = err
		close(c.initDone)
	} else {
		// A request pipelined behind the handshake waits for it, or for
		// the instance's end (not its own cancel: a cancelled tool still
		// runs, and answers as it sees fit).
		select {
		case <-c.initDone:
		case <-s.ctx.Done():
		}
		switch {
		case s.ctx.Err() != nil:
			err = s.ctx.Err() // never written: the instance is ending
		case s.initErr != nil:
			err = rpcError(codeInvalidRequest, "the handshake failed: %v", s.initErr)
		default:
			res, err = c.dispatch()
		}
	}
	s.mu.Lock()
	s.live.remove(c)
	s.mu.Unlock()
	s.reply(c.id, res, err)
}

// dispatch runs the request's handler to its result.
func (c *call) dispatch() (any, error) {
	s := c.s
	switch {
	case !c.known:
		return nil, rpcError(codeMethodNotFound, "%s: no method %q", s.p.Name, c.method)
	case c.hasTool:
		return s.toolCall(c.ctx, c.tool)
	case c.run == nil && c.perr == nil:
		c.run, _, c.perr = c.h.prepare(s, c.params)
	}
	if c.perr != nil {
		return nil, c.perr
	}
	return c.run(c.ctx)
}
