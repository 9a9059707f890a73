package pluginkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// errShut is what a write after the instance began to end returns: nothing
// is answered once an instance is going, so a call cut short by Exit is
// never answered.
var errShut = errors.New("pluginkit: the instance is ending")

// The JSON-RPC error codes the kit answers with.
const (
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// wire is the plugin's end of the line-delimited JSON-RPC 2.0 wire, without
// a JSON-RPC library: the host speaks sourcegraph/jsonrpc2, and this end
// reads and writes exactly the messages that library would, but decodes
// each line once into an envelope and encodes each message once, straight
// into a single Write. Inside a wasm guest, where Go's code runs many
// times slower than natively, the work per message is the cost of a call.
//
// It reads with protocol's LineStream (one message per line, a line over
// the cap or not JSON skipped), knows when reading has stopped, refuses
// writes once shut, and can unblock a pending read of stdin when that is
// possible.
type wire struct {
	ls    *protocol.LineStream
	stdin io.Reader
	out   io.Writer

	wmu  sync.Mutex // one message per Write, never interleaved
	shut atomic.Bool

	readDone chan struct{} // closed once reading has failed for good
	readErr  error         // why; written before readDone is closed

	closeOnce sync.Once
}

func newWire(stdin io.Reader, stdout io.Writer) *wire {
	w := &wire{stdin: stdin, out: stdout, readDone: make(chan struct{})}
	w.ls = protocol.NewLineStream(stdio{stdin, stdout, w}, protocol.LineStreamOptions{})
	return w
}

// envelope is any incoming message, decoded once (parseEnvelope): the
// params stay raw until the handler that knows their type decodes them,
// once; a tool call's may have been decoded on the way (toolCall).
type envelope struct {
	ID     json.RawMessage // absent: nil
	Method *string         // absent or null: nil
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage

	toolCall bool                    // tool holds the params, decoded with the line
	tool     protocol.ToolCallParams // a tool call's params, when toolCall
}

// read reads the next message into m (a tool call's params too, when it
// can do that in the same pass). A line that is not a JSON object, or
// whose method is not a string, is skipped; only the end of stdin (or a
// read error) ends it.
func (w *wire) read(m *envelope) error {
	for {
		line, err := w.ls.ReadLine()
		if err != nil {
			return err
		}
		if parseEnvelope(line, m) {
			return nil
		}
	}
}

// The outgoing messages, with their workers in the order
// sourcegraph/jsonrpc2 writes them, so the bytes on the wire are the ones
// the kit wrote when it used that library.
type (
	resultMsg struct {
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
		JSONRPC string          `json:"jsonrpc"`
	}
	requestMsg struct {
		ID      uint64 `json:"id"`
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	notifyMsg struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
)

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *wireError) Error() string { return e.Message }

// send encodes msg with encoding/json as one line and writes it in one
// Write. The encoding happens outside the lock, so writers only queue for
// the Write itself. The hot messages are built by hand (encode.go).
func (w *wire) send(msg any) error {
	return json.NewEncoder(lineOut{w}).Encode(msg) // Encode writes once, newline included
}

// lineOut is the wire's stdout for one whole line.
type lineOut struct{ w *wire }

func (l lineOut) Write(line []byte) (int, error) {
	l.w.wmu.Lock()
	defer l.w.wmu.Unlock()
	if l.w.shut.Load() {
		return 0, errShut
	}
	return l.w.out.Write(line)
}

func (l lineOut) write(line []byte) error {
	_, err := l.Write(line)
	return err
}

// requestID turns a request's id into the bytes its answer echoes, as
// sourcegraph/jsonrpc2 does: a missing or null id makes a notification; a
// string is echoed re-encoded; an integer as an unsigned 64-bit number; any
// other id (a fraction, an exponent, a bool, an object) makes the line one
// that library refuses, so it is skipped.
func requestID(raw json.RawMessage) (id json.RawMessage, notif, ok bool) {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, true, true
	case raw[0] == '"':
		if plainString(raw) {
			return raw, false, true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false, false
		}
		b, err := json.Marshal(s)
		return b, false, err == nil
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return nil, false, false
		}
		if raw[0] != '-' {
			return raw, false, true // digits only, as JSON writes them
		}
		return strconv.AppendUint(nil, uint64(n), 10), false, true
	}
	return nil, false, false
}

// plainString reports whether a JSON string encodes to itself: printable
// ASCII with nothing to escape, not even for HTML.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// canUnblock reports whether closing stdin ends a Read blocked on it. A
// pipe's does; an *os.File's does not (a blocking read holds the
// descriptor until it returns), and the process owning os.Stdin ends
// anyway once Serve returns.
func (w *wire) canUnblock() bool {
	_, closer := w.stdin.(io.Closer)
	_, file := w.stdin.(*os.File)
	return closer && !file
}

// closeStdin ends a read blocked on stdin, when that is possible.
func (w *wire) closeStdin() {
	w.closeOnce.Do(func() {
		if w.canUnblock() {
			w.stdin.(io.Closer).Close()
		}
	})
}

// stdio joins stdin and stdout into the ReadWriteCloser LineStream frames.
// Close closes stdin only: stdout belongs to the caller of Serve.
type stdio struct {
	io.Reader
	io.Writer
	w *wire
}

func (s stdio) Close() error {
	s.w.closeStdin()
	return nil
}
