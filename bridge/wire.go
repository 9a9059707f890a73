package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// wire is an instance's connection, and the one seam between the two ways
// messages cross it.
//
// sourcegraph/jsonrpc2 (rpc) owns the connection's life, the handshake,
// the plugin's requests and the host's answers to them, and the host's
// notifications. The host's own requests bypass it for speed: jsonrpc2
// decodes every line twice (generically, then into its Response) before
// the caller decodes the result a third time, and wakes the caller from
// its reading goroutine. So sendRequest writes them itself, and the stream
// offers every line to the fast path before jsonrpc2 reads it: a
// notification to notify, an answer to one of the host's requests,
// decoded once, to answer. Whatever these do not take (the handshake's
// answer, an answer to no request, the plugin's requests) jsonrpc2 reads
// as before, and answered hears of each answer it reads. Over a conn
// whose reads a deadline can interrupt (transport.ReadDeadliner), a
// caller waiting for its answer reads the stream itself in its turn
// (readerHandoff).
type wire struct {
	rpc    *jsonrpc2.Conn
	stream *readerHandoff
}

// wireHooks are what a wire hands the lines it reads to.
type wireHooks struct {
	notify   func(method string, params json.RawMessage)
	answer   func(id jsonrpc2.ID, r reply) bool // reports whether the answer was the host's to take
	answered func(id jsonrpc2.ID)               // an answer jsonrpc2 read
	handler  jsonrpc2.Handler                   // the plugin's requests
	log      io.Writer                          // where jsonrpc2 reports an answer with an unknown id
}

func newWire(ctx context.Context, conn transport.Conn, sopts protocol.LineStreamOptions, hooks wireHooks) *wire {
	var setDeadline func(time.Time) error
	if d, ok := conn.(transport.ReadDeadliner); ok {
		setDeadline = d.SetReadDeadline
	}
	takeAnswer := func(line []byte) bool {
		id, r, ok := decodeAnswer(line)
		return ok && hooks.answer(id, r)
	}
	w := &wire{stream: newReaderHandoff(protocol.NewLineStream(conn, sopts), hooks.notify, takeAnswer, setDeadline)}
	w.rpc = jsonrpc2.NewConn(ctx, w.stream, hooks.handler, jsonrpc2.SetLogger(logWriter{hooks.log}),
		jsonrpc2.OnRecv(func(_ *jsonrpc2.Request, resp *jsonrpc2.Response) {
			if resp != nil {
				hooks.answered(resp.ID)
			}
		}))
	return w
}

// wireRequest is a request as it goes on the wire; jsonrpc2's Request
// marshals its params and then itself through a map.
type wireRequest struct {
	ID      jsonrpc2.ID `json:"id"`
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	Params  any         `json:"params,omitempty"`
}

// sendRequest writes one of the host's requests, past jsonrpc2.
func (w *wire) sendRequest(id jsonrpc2.ID, method string, params any) error {
	return w.stream.WriteObject(wireRequest{ID: id, JSONRPC: "2.0", Method: method, Params: params})
}

// decodeAnswer decodes line if it is an answer to one of the host's
// requests, whose ids are strings: a line with any other id is not.
// (jsonrpc2.ID's own decoder tries a number first, and a string id costs
// it an error value.)
func decodeAnswer(line []byte) (jsonrpc2.ID, reply, bool) {
	var m struct {
		ID     *string         `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"` // "null" when null, empty when absent
		Error  *jsonrpc2.Error `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != nil || (m.Result == nil && m.Error == nil) {
		return jsonrpc2.ID{}, reply{}, false
	}
	return jsonrpc2.ID{Str: *m.ID, IsString: true}, reply{result: m.Result, err: m.Error}, true
}

// call sends a request through jsonrpc2 and waits for its answer: the
// handshake's.
func (w *wire) call(ctx context.Context, method string, params, result any) error {
	return w.rpc.Call(ctx, method, params, result)
}

// notify sends a notification.
func (w *wire) notify(method string, params any) error {
	return w.rpc.Notify(context.Background(), method, params)
}

// reply answers one of the plugin's requests: result, or rerr if not nil.
func (w *wire) reply(ctx context.Context, id jsonrpc2.ID, result any, rerr *jsonrpc2.Error) error {
	if rerr != nil {
		return w.rpc.ReplyWithError(ctx, id, rerr)
	}
	return w.rpc.Reply(ctx, id, result)
}

// closed is closed once the wire is down.
func (w *wire) closed() <-chan struct{} { return w.rpc.DisconnectNotify() }

// down reports whether the wire is down.
func (w *wire) down() bool {
	select {
	case <-w.closed():
		return true
	default:
		return false
	}
}

// close takes the wire down (stdin closed first, by the conn's Close);
// jsonrpc2.ErrClosed if it was down already.
func (w *wire) close() error { return w.rpc.Close() }

// logWriter adapts the plugin's log to jsonrpc2's Logger, which is where
// an answer with an unknown id is reported.
type logWriter struct{ w io.Writer }

func (l logWriter) Printf(format string, v ...any) {
	fmt.Fprintf(l.w, "bridge: "+strings.TrimPrefix(format, "jsonrpc2: "), v...)
}
