package bridge

import (
	"context"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// The host's own requests (Call) are sent and their answers read by the
// bridge, beside jsonrpc2 rather than through it: jsonrpc2 decodes every
// line it reads generically to tell an answer from a request, then again
// into its Response, before the caller decodes the result a third time.
// The line stream offers the bridge each answer first (takeAnswer), which
// decodes it once; whatever it does not take (the handshake's answer, an
// answer to no request) goes on to jsonrpc2 as before, and jsonrpc2 still
// owns the connection's life, the plugin's requests and notifications.
// Over a transport whose reads can be interrupted (exec), the caller
// waiting for an answer reads the wire itself in its turn (await), so
// that the answer wakes it from the poller rather than through jsonrpc2's
// reading goroutine.

// reply is the answer to one of the host's requests.
type reply struct {
	result json.RawMessage
	err    *jsonrpc2.Error
}

// waiter is a request sent, waiting for its answer.
type waiter struct {
	inst *instance
	ch   chan reply // buffered: the reader never waits on a caller
}

// wireRequest is a request as it goes on the wire; jsonrpc2's Request
// marshals its params and then itself through a map.
type wireRequest struct {
	ID      jsonrpc2.ID `json:"id"`
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	Params  any         `json:"params,omitempty"`
}

// dispatch sends request id and returns what waits for its answer. The
// request is registered before the write, since the answer may arrive
// before the write returns. A wire already down sends nothing.
func (inst *instance) dispatch(id jsonrpc2.ID, method string, params any) (waiter, error) {
	w := waiter{inst: inst, ch: make(chan reply, 1)}
	inst.callsMu.Lock()
	if inst.down() {
		inst.callsMu.Unlock()
		return waiter{}, jsonrpc2.ErrClosed
	}
	inst.calls[id] = w.ch
	inst.callsMu.Unlock()
	if err := inst.stream.WriteObject(wireRequest{ID: id, JSONRPC: "2.0", Method: method, Params: params}); err != nil {
		inst.callsMu.Lock()
		delete(inst.calls, id)
		inst.callsMu.Unlock()
		if inst.down() {
			return waiter{}, jsonrpc2.ErrClosed
		}
		return waiter{}, err
	}
	return w, nil
}

// down reports whether the wire has closed.
func (inst *instance) down() bool {
	select {
	case <-inst.rpc.DisconnectNotify():
		return true
	default:
		return false
	}
}

// takeAnswer is the line stream's Answer: it takes an answer to one of
// the host's requests, on whichever goroutine read it (the wire's reader,
// or a caller reading in its turn: see await). The request's route ends
// before its answer is delivered, so nothing the plugin sends after its
// answer reaches the finished call; and any answer shows the instance
// alive (owed). A line it does not take, jsonrpc2 reads as before.
func (inst *instance) takeAnswer(line []byte) bool {
	var m struct {
		// The host's ids are strings: a line with any other id is not the
		// answer to one of its requests. (jsonrpc2.ID's own decoder tries
		// a number first, and a string id costs it an error value.)
		ID     *string         `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"` // "null" when null, empty when absent
		Error  *jsonrpc2.Error `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != nil || (m.Result == nil && m.Error == nil) {
		return false
	}
	id := jsonrpc2.ID{Str: *m.ID, IsString: true}
	inst.callsMu.Lock()
	ch, ok := inst.calls[id]
	delete(inst.calls, id)
	inst.callsMu.Unlock()
	if !ok {
		return false
	}
	inst.p.endRoute(id)
	inst.owed.answered(id)
	ch <- reply{result: m.Result, err: m.Error}
	return true
}

// wait waits for the answer and decodes its result into result, as
// jsonrpc2's Waiter does: ctx's error when ctx ends first, errPastDeadline
// when due is closed first (the request's deadline; nil: none),
// jsonrpc2's ErrClosed when the wire closes first, the plugin's
// *jsonrpc2.Error when it answered with one; and ctx's error or
// errPastDeadline, whatever has arrived, when either has passed before
// the wait begins. A request whose wait ended unanswered stays
// registered: its late answer is still taken, and still counts as one.
func (w waiter) wait(ctx context.Context, due <-chan struct{}, result any) error {
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
	r, err := w.await(ctx, due)
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
// caller reading when ctx ends, or due passes (see clock.tick), is
// interrupted.
func (w waiter) await(ctx context.Context, due <-chan struct{}) (reply, error) {
	s := w.inst.stream
	var turn <-chan struct{} // nil, never ready, without turns
	if s.turns() {
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
		case r := <-w.ch:
			return r, nil
		case <-due:
			return reply{}, errPastDeadline
		case <-ctx.Done():
			return reply{}, ctx.Err()
		case <-w.inst.rpc.DisconnectNotify():
			select {
			case r := <-w.ch: // answered just before the wire closed
				return r, nil
			default:
				return reply{}, jsonrpc2.ErrClosed
			}
		case <-turn:
			select {
			case r := <-w.ch: // read by the reader before
				s.release()
				return r, nil
			default:
			}
			s.readTurn(over)
		}
	}
}
