package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// lineTransport is the server's stdio as the sdk's Transport, framed by
// the translator rather than by the sdk's IOTransport, which ends the
// session at the first line that is not a JSON-RPC message: one stray
// print (an npm notice, a debug line) and every later call waited for its
// deadline. Here the bingo wire's own rule holds: a line that is not a
// message, or is over the cap, goes to the plugin's log and is skipped
// (protocol.LineStream frames both wires), and the session goes on. Each
// message is decoded by the sdk's rules and decoder (decodeMessage).
//
// It also reports, on the reading goroutine and so before the sdk hands
// the message on:
//   - notify: each notification, in wire order. The sdk runs its
//     notification handlers on a goroutine of their own and hands a call
//     its answer straight from the reader, so a handler may hear of a
//     call's progress, or of the tools/list_changed its call caused,
//     after the call has answered; taken here, both reach the host before
//     the call's answer, as the server sent them (see notified).
//   - result: each result of a request the client sent, with the
//     request's method, which the sdk's types may drop fields of (a tool's
//     execution.taskSupport).
//   - rootsAsked: a roots/list request of the server's, in wire order (so
//     before any answer the server sent after it); rootsAnswered, once the
//     client's answer to it has been written.
type lineTransport struct {
	rw            io.ReadWriter // the server's stdout and stdin; never closed here
	log           io.Writer
	trace         bool // every line both ways into log (Config.Trace)
	notify        func(method string, params json.RawMessage)
	result        func(method string, result json.RawMessage)
	rootsAsked    func()
	rootsAnswered func()
}

func (t lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{wire: newWire(t), incoming: make(chan msgOrErr), closed: make(chan struct{})}
	opts := protocol.LineStreamOptions{
		Skipped: func(line []byte, why error) {
			fmt.Fprintf(t.log, "mcpbridge: skipped a line on the server's stdout (%v): %q\n", why, headOf(line))
		},
	}
	if t.trace {
		opts.Trace = func(dir string, line []byte) { protocol.TraceLine(t.log, time.Now(), "mcp "+dir, line) }
	}
	c.stream = protocol.NewLineStream(readWriteNopCloser{t.rw}, opts)
	// Reads happen on a goroutine of their own, so that Close unblocks a
	// Read at once (the sdk's contract); it ends when the server's stdout
	// does, which the instance's end sees to.
	go c.readLoop()
	return c, nil
}

// readWriteNopCloser is the server's stdio as the line stream sees it:
// serve, not the session, decides when the server's stdin closes.
type readWriteNopCloser struct{ io.ReadWriter }

func (readWriteNopCloser) Close() error { return nil }

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	*wire
	stream   *protocol.LineStream
	incoming chan msgOrErr
	closed   chan struct{}
	once     sync.Once
}

// wire is what the translator keeps of one session's messages, to report
// them (lineTransport's notify, result, rootsAsked and rootsAnswered).
type wire struct {
	t     lineTransport
	mu    sync.Mutex
	sent  map[jsonrpc.ID]string // the client's requests not yet answered: their methods
	roots map[jsonrpc.ID]bool   // the server's roots/list requests not yet answered
}

func newWire(t lineTransport) *wire { return &wire{t: t, sent: map[jsonrpc.ID]string{}} }

// sending records a request of the client's before it is sent: its
// answer may be read before the write returns.
func (w *wire) sending(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		w.mu.Lock()
		w.sent[req.ID] = req.Method
		w.mu.Unlock()
	}
}

// written notes a message of the client's that the server now has: an
// answer to its roots/list is rootsAnswered.
func (w *wire) written(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	w.mu.Lock()
	roots := w.roots[resp.ID]
	delete(w.roots, resp.ID)
	w.mu.Unlock()
	if roots && w.t.rootsAnswered != nil {
		w.t.rootsAnswered()
	}
}

// tap is a remote session's mcphttp.Tap: each message, as it crosses,
// traced (Config.Trace) and reported as a stdio server's line would be,
// though the sdk, which reads the HTTP transport itself, decodes and
// hands it on.
func (w *wire) tap(toServer bool, msg []byte) {
	if w.t.trace {
		dir := "<-"
		if toServer {
			dir = "->"
		}
		protocol.TraceLine(w.t.log, time.Now(), "mcp "+dir, msg)
	}
	if !toServer {
		w.decode(msg)
		return
	}
	if m, err := decodeMessage(msg); err == nil {
		w.sending(m)
		w.written(m)
	}
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m.msg, m.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	c.sending(msg)
	if err := c.stream.WriteObject(json.RawMessage(data)); err != nil {
		return err
	}
	c.written(msg)
	return nil
}

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// readLoop reads the server's stdout until it ends, handing each message
// to Read.
func (c *lineConn) readLoop() {
	for {
		line, err := c.stream.ReadLine()
		if err != nil {
			c.deliver(msgOrErr{err: err})
			return
		}
		for _, m := range c.decode(line) {
			if !c.deliver(msgOrErr{msg: m}) {
				return
			}
		}
	}
}

// deliver hands m to Read, and reports whether the connection is still
// open.
func (c *lineConn) deliver(m msgOrErr) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// decode is the messages of one line: one, or a batch's (which a server
// of protocol 2025-03-26 may send). What is not a message is logged and
// left out.
func (c *wire) decode(line []byte) []jsonrpc.Message {
	var raws []json.RawMessage
	if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &raws) != nil {
			raws = nil
		}
	}
	if raws == nil {
		raws = []json.RawMessage{line}
	}
	var msgs []jsonrpc.Message
	for _, raw := range raws {
		m, err := c.message(raw)
		if err != nil {
			fmt.Fprintf(c.t.log, "mcpbridge: skipped a line on the server's stdout (not a JSON-RPC message: %v): %q\n", err, headOf(raw))
			continue
		}
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// message decodes one message and reports it (lineTransport's notify and
// result). A nil message with no error was taken here: a progress
// notification, which notify is all that reads (the client sets no
// handler for it), so the sdk does not decode it again.
func (c *wire) message(raw []byte) (jsonrpc.Message, error) {
	m, err := decodeMessage(raw)
	if err != nil {
		r := c.discoverRefused(raw)
		if r == nil {
			return nil, err
		}
		m = r
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		if m.IsCall() && m.Method == "roots/list" && c.t.rootsAsked != nil {
			c.mu.Lock()
			if c.roots == nil {
				c.roots = map[jsonrpc.ID]bool{}
			}
			c.roots[m.ID] = true
			c.mu.Unlock()
			c.t.rootsAsked()
		}
		if !m.IsCall() && c.t.notify != nil {
			c.t.notify(m.Method, m.Params)
			if m.Method == methodProgress {
				return nil, nil
			}
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		method, ok := c.sent[m.ID]
		delete(c.sent, m.ID)
		c.mu.Unlock()
		if !ok {
			return nil, errors.New("an answer to no request sent")
		}
		if m.Error == nil && c.t.result != nil {
			c.t.result(method, m.Result)
		}
	}
	return m, nil
}

// methodProgress is the server's progress notification.
const methodProgress = "notifications/progress"

// wireMessage is a JSON-RPC message as the sdk's jsonrpc.DecodeMessage
// reads it (method raw, so that its presence is told apart from "").
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage is jsonrpc.DecodeMessage, by the same rules and with the
// same decoder and its flag (no case-insensitive match of a field's
// name), but from the line itself: the sdk reads each message and its
// method through a decoder with a new 32 KiB buffer, which was most of
// what a tool call allocated. Trailing bytes after the message are an
// error, as encoding/json's Unmarshal has them. Like the sdk's, it
// refuses a message nested deeper than maxDepth before the decoder, which
// recurses once a level with no limit of its own, sees it: a line nested
// 4,000,000 deep overflowed bingo's stack, and 100,000 deep took seconds.
func decodeMessage(raw []byte) (jsonrpc.Message, error) {
	if err := protocol.CheckDepth(raw, maxDepth); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var w wireMessage
	if err := parse(raw, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := parse(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request")
	}
	r := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		r.Error = w.Error
	}
	return r, nil
}

// maxDepth is the deepest nesting of a message the sdk decodes (its
// internal/json's defaultMaxDepth): no MCP message needs more than a few
// levels.
const maxDepth = 1000

// parse decodes data into v as the sdk's decoder does.
func parse(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(bytes.TrimSpace(rest)) > 0 {
		err = fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return err
}

// discoverRefused is an error whose id is null (or missing), as the answer
// to the server/discover in flight, if there is one; nil otherwise.
// JSON-RPC gives an error a null id when the server could not read the
// request's id, and some servers that do not know server/discover, the
// first message the sdk sends, refuse it so: taken as no answer at all,
// the sdk's fallback to initialize never ran and the server could not be
// used. server/discover is sent before anything else, so an error then can
// only be its answer. At any other time such an error answers nothing
// that can be told, and is logged and skipped like any line that is not a
// message.
func (c *wire) discoverRefused(raw []byte) *jsonrpc.Response {
	var w struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if json.Unmarshal(raw, &w) != nil || w.Error == nil || w.Method != nil || (w.ID != nil && string(w.ID) != "null") {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, method := range c.sent {
		if method == methodDiscover {
			fmt.Fprintf(c.t.log, "mcpbridge: %s was refused with an error of id null (%d %s): taken as its answer\n", methodDiscover, w.Error.Code, w.Error.Message)
			return &jsonrpc.Response{ID: id, Error: w.Error}
		}
	}
	return nil
}

// methodDiscover is the request the sdk first sends (protocol 2026-07-28),
// falling back to initialize when the server refuses it.
const methodDiscover = "server/discover"

// headOf is what the log shows of a skipped line.
func headOf(line []byte) []byte {
	const max = 512
	return line[:min(len(line), max)]
}
