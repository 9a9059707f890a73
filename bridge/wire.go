package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// wire is an instance's connection: the one engine that reads and writes
// its line-delimited JSON-RPC. Every line read is decoded and classified
// once (classify): a notification goes to notify, an answer to answer
// (the inFlight table, where the handshake's request is one like any
// other, so every answer passes the wedge rule), a request of the
// plugin's to serve, and anything else to one log line. One goroutine
// reads (run); over a conn whose reads a deadline can interrupt
// (transport.ReadDeadliner), a caller waiting for its answer reads in its
// turn instead (readerHandoff). Writes go through the LineStream, one at
// a time. sourcegraph/jsonrpc2 gives the message types and error codes,
// not a connection.
type wire struct {
	stream *protocol.LineStream
	turns  *readerHandoff  // nil: only run reads
	ended  <-chan struct{} // closed once the instance has ended: nothing more is written
	hooks  wireHooks
	ran    chan struct{} // closed once run has returned
}

// wireHooks are what a wire hands the messages it reads to, on the
// goroutine that read them.
type wireHooks struct {
	notify  func(method string, params json.RawMessage)
	answer  func(id jsonrpc2.ID, r reply) bool // reports whether the answer was to a request in flight
	serve   func(m *message)                   // the plugin's request; only on run's goroutine, which it may hold up
	skipped func(line []byte, why error)       // a line that is not a message (also the LineStream's Skipped)
	end     func(why error)                    // the stream has ended: the instance ends (instance.end)
	log     io.Writer
}

// message is a line of the wire, decoded once.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"` // "null" when null, nil when absent
	Error  *jsonrpc2.Error `json:"error"`
}

// errNeither is why a line of valid JSON was skipped.
var errNeither = errors.New("not a JSON-RPC message: neither a request, an answer nor a notification")

// What a line read is.
type lineKind int

const (
	notAMessage lineKind = iota // reported to skipped
	aNotification
	anAnswer
	aRequest
	neither // valid JSON, but none of the above
)

// newWire makes the wire; go run starts its reading, once its owner holds
// it (the hooks may reach the wire as soon as a line comes).
func newWire(conn io.ReadWriteCloser, sopts protocol.LineStreamOptions, ended <-chan struct{}, hooks wireHooks) *wire {
	sopts.Skipped = hooks.skipped
	w := &wire{stream: protocol.NewLineStream(conn, sopts), ended: ended, hooks: hooks, ran: make(chan struct{})}
	if d, ok := conn.(transport.ReadDeadliner); ok {
		w.turns = newReaderHandoff(d.SetReadDeadline)
	}
	return w
}

// classify decodes line into m and says what it is.
func (w *wire) classify(line []byte, m *message) lineKind {
	if err := json.Unmarshal(line, m); err != nil {
		w.hooks.skipped(line[:min(len(line), 512)], fmt.Errorf("not a JSON-RPC message: %w", err))
		return notAMessage
	}
	if string(m.ID) == "null" {
		m.ID = nil // as jsonrpc2 reads it: no id
	}
	switch {
	case m.Method != "" && m.ID == nil:
		return aNotification
	case m.Method != "":
		return aRequest
	case m.ID != nil && (m.Result != nil || m.Error != nil):
		return anAnswer
	case m.ID != nil:
		// An id and no method, or an empty one: a request for no
		// method, answered as one for a method the host does not serve.
		return aRequest
	}
	return neither
}

// handle acts on a message read, but a request (serve's, on run).
func (w *wire) handle(line []byte, m *message, k lineKind) {
	switch k {
	case aNotification:
		w.hooks.notify(m.Method, m.Params)
	case anAnswer:
		id, err := idOf(m.ID)
		if err != nil {
			fmt.Fprintf(w.hooks.log, "bridge: ignored an answer whose id is not a JSON-RPC id: %.512s\n", line)
			return
		}
		r := reply{result: m.Result}
		if m.Error != nil {
			r.err = m.Error
		}
		if !w.hooks.answer(id, r) {
			fmt.Fprintf(w.hooks.log, "bridge: ignoring answer #%s with no corresponding request\n", id)
		}
	case neither:
		w.hooks.skipped(line[:min(len(line), 512)], errNeither)
	}
}

// idOf decodes a message's id. The host's own ids are plain strings,
// decoded here without an error value: jsonrpc2.ID's decoder tries a
// number first.
func idOf(raw json.RawMessage) (jsonrpc2.ID, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return jsonrpc2.ID{Str: string(raw[1 : n-1]), IsString: true}, nil
	}
	var id jsonrpc2.ID
	err := id.UnmarshalJSON(raw)
	return id, err
}

// run is the wire's reader: it reads until the stream ends, handing the
// reading to callers in their turns where it can, and serves the
// plugin's requests itself, in wire order; serve may hold it up (a full
// set of handler slots), which is the backpressure. The stream's end
// ends the instance.
func (w *wire) run() {
	defer close(w.ran)
	for {
		m, err := w.nextRequest()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, transport.ErrKilled) && !errors.Is(err, os.ErrClosed) {
				fmt.Fprintf(w.hooks.log, "bridge: reading its stdout: %v\n", err)
			}
			w.hooks.end(errStdoutEnded)
			return
		}
		w.hooks.serve(m)
	}
}

// nextRequest reads on until a request of the plugin's, handling every
// other line as it comes: itself while no caller waits, or a caller's
// read for it (readerHandoff). It returns the stream's end.
func (w *wire) nextRequest() (*message, error) {
	if w.turns == nil {
		for {
			line, err := w.stream.ReadLine()
			if err != nil {
				return nil, err
			}
			m := new(message)
			if k := w.classify(line, m); k != aRequest {
				w.handle(line, m, k)
				continue
			}
			return m, nil
		}
	}
	h := w.turns
	for {
		m, err := h.runTurn()
		if m != nil || err != nil {
			return m, err
		}
		line, err := w.stream.ReadLine()
		if m, done := w.took(line, err); done {
			if m != nil {
				h.release() // served without the role: callers read on meanwhile
			}
			return m, err
		}
	}
}

// readTurn is a waiting caller's turn at reading (readerHandoff): it
// reads one line, unless over reports true, and gives the role up; a
// request, or the stream's end, goes to run with the role.
func (w *wire) readTurn(over func() bool) {
	h := w.turns
	if !h.beginTurn(over) {
		return
	}
	line, err := w.stream.ReadLine()
	if err == nil {
		h.turnReads.Add(1)
	}
	if m, done := w.took(line, err); done {
		h.leaveToRun(m, err)
	}
}

// took handles a line read holding the role. done reports a request or
// the stream's end, for run, with the role still held; for any other
// line, or a read woken by its deadline, the role is given back.
func (w *wire) took(line []byte, err error) (m *message, done bool) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.turns.release()
		return nil, false
	case err != nil:
		return nil, true // past the end, the role stays taken: no one reads after it
	}
	m = new(message)
	k := w.classify(line, m)
	if k == aRequest {
		return m, true
	}
	// Handled holding the role: a caller that takes it next must find its
	// answer already delivered, or it would read on for it; and a line
	// that is not a message is logged before the next is read.
	w.handle(line, m, k)
	w.turns.release()
	return nil, false
}

// wireRequest is a request as it goes on the wire; jsonrpc2's Request
// marshals its params and then itself through a map.
type wireRequest struct {
	ID      jsonrpc2.ID `json:"id"`
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	Params  any         `json:"params,omitempty"`
}

// sendRequest writes one of the host's requests.
func (w *wire) sendRequest(id jsonrpc2.ID, method string, params any) error {
	return w.stream.WriteObject(wireRequest{ID: id, JSONRPC: "2.0", Method: method, Params: params})
}

// errStdoutEnded is the reason an instance ends when its stdout does.
var errStdoutEnded = errors.New("closed its stdout")

// notify sends a notification.
func (w *wire) notify(method string, params any) error {
	if w.isDown() {
		return errEnded
	}
	req := &jsonrpc2.Request{Method: method, Notif: true}
	if err := req.SetParams(params); err != nil {
		return err
	}
	return w.stream.WriteObject(req)
}

// reply answers one of the plugin's requests: result, or rerr if not nil.
func (w *wire) reply(id jsonrpc2.ID, result any, rerr *jsonrpc2.Error) error {
	if w.isDown() {
		return errEnded
	}
	resp := &jsonrpc2.Response{ID: id, Error: rerr}
	if rerr == nil {
		if err := resp.SetResult(result); err != nil {
			return err
		}
	}
	return w.stream.WriteObject(resp)
}

// isDown reports whether the instance has ended.
func (w *wire) isDown() bool {
	select {
	case <-w.ended:
		return true
	default:
		return false
	}
}
