package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// Host is the plugin's door back to the host, for the instance being
// served. Every handler's ctx carries it (HostFrom). Its methods are safe
// for concurrent use.
type Host struct {
	s    *server
	done <-chan struct{}
	exit func(error)

	mu      sync.Mutex
	closed  bool                   // the instance is ending: no call waits
	seq     uint64                 // the next call's id
	pending map[uint64]chan answer // calls waiting for the host, by id
}

// answer is the host's answer to one of the plugin's calls.
type answer struct {
	result json.RawMessage
	err    *wireError
}

type hostKey struct{}

// ErrNoHost is what the methods of a nil *Host return: HostFrom was given a
// ctx that no handler of a served Plugin passed on.
var ErrNoHost = errors.New("pluginkit: no host: the context does not come from a served plugin")

// HostFrom returns the host of the instance whose handler ctx came from, or
// nil outside a handler. The methods of a nil *Host fail with ErrNoHost.
func HostFrom(ctx context.Context) *Host {
	h, _ := ctx.Value(hostKey{}).(*Host)
	return h
}

// HostError is the host's refusal of a Host call: the JSON-RPC error it
// answered with.
type HostError struct {
	Code    int64
	Message string
}

func (e *HostError) Error() string { return e.Message }

// Notice says one line to the person under the plugin's own name. level is
// "info", "warn" or "error".
func (h *Host) Notice(ctx context.Context, level, message string) error {
	return h.Call(ctx, protocol.HostServiceKey, protocol.HostNotice, protocol.NoticeParams{Level: level, Message: message}, nil)
}

// Call calls method of the service the host knows by key: another plugin's,
// or the host's own (protocol.HostServiceKey). params is sent as JSON;
// result, if not nil, receives the answer. It waits for the answer or ctx.
func (h *Host) Call(ctx context.Context, key, method string, params, result any) error {
	if h == nil {
		return ErrNoHost
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("pluginkit: %s %s: params: %w", key, method, err)
	}
	fail := func(err error) error { return fmt.Errorf("pluginkit: %s %s: %w", key, method, err) }
	id, wait, err := h.begin()
	if err != nil {
		return fail(err)
	}
	err = h.s.w.send(requestMsg{ID: id, JSONRPC: "2.0", Method: protocol.MethodServiceCall,
		Params: protocol.ServiceCallParams{Key: key, Method: method, Params: raw}})
	if err != nil {
		h.forget(id)
		return fail(err)
	}
	var a answer
	select {
	case <-ctx.Done():
		h.forget(id)
		return fail(ctx.Err())
	case got, ok := <-wait:
		if !ok {
			return fail(errShut)
		}
		a = got
	}
	if a.err != nil {
		return &HostError{Code: a.err.Code, Message: a.err.Message}
	}
	var res protocol.ServiceCallResult
	if err := json.Unmarshal(a.result, &res); err != nil {
		return fail(err)
	}
	if result != nil && len(res.Result) > 0 {
		if err := json.Unmarshal(res.Result, result); err != nil {
			return fmt.Errorf("pluginkit: %s %s: result: %w", key, method, err)
		}
	}
	return nil
}

// begin registers a call and returns its id and where its answer arrives.
func (h *Host) begin() (uint64, chan answer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, nil, errShut
	}
	if h.pending == nil {
		h.pending = map[uint64]chan answer{}
	}
	id, wait := h.seq, make(chan answer, 1)
	h.seq++
	h.pending[id] = wait
	return id, wait, nil
}

// forget drops a call nobody waits for any more; a late answer to it is
// ignored.
func (h *Host) forget(id uint64) {
	h.mu.Lock()
	delete(h.pending, id)
	h.mu.Unlock()
}

// answered delivers the host's answer m to the call it names, on the
// reader. An answer to no call is dropped, as is one whose error is not a
// JSON-RPC error object.
func (h *Host) answered(m *envelope) {
	var a answer
	if !isNull(m.Error) {
		if json.Unmarshal(m.Error, &a.err) != nil || a.err == nil {
			return
		}
	}
	a.result = m.Result
	if isNull(a.result) {
		a.result = json.RawMessage("null")
	}
	id, err := strconv.ParseUint(string(m.ID), 10, 64)
	if err != nil {
		return
	}
	h.mu.Lock()
	wait := h.pending[id]
	delete(h.pending, id)
	h.mu.Unlock()
	if wait != nil {
		wait <- a
	}
}

// close fails every call still waiting, and every later one: the instance
// is ending.
func (h *Host) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id, wait := range h.pending {
		close(wait)
		delete(h.pending, id)
	}
}

// Done is closed when the instance begins to end: stdin ended, Serve's ctx
// was cancelled, or Exit was called. Every handler's ctx is cancelled then
// too; Done is for work that ignores the cancelling of its own call (a
// tool that does not stop on tool/cancel) but must not outlive the
// instance, since Serve waits for every handler before it returns.
func (h *Host) Done() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.done
}

// Exit ends the instance because the plugin cannot go on: from this moment
// nothing more is written (the call that asked is not answered), every
// handler's ctx is cancelled, and Serve returns err. Main exits with err's
// ExitCode() if it has one, 1 otherwise. A nil err is reported as an error
// too: ending quietly is what closing stdin is for.
func (h *Host) Exit(err error) {
	if h == nil {
		return
	}
	if err == nil {
		err = errors.New("pluginkit: the plugin exited")
	}
	h.exit(err)
}
