package pluginkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// note is one notification the fake host received.
type note struct {
	method string
	params json.RawMessage
}

// host is a fake host over io.Pipe pairs, speaking sourcegraph/jsonrpc2
// over protocol's LineStream exactly as the bridge does.
type host struct {
	t      *testing.T
	conn   *jsonrpc2.Conn
	served chan error // Serve's answer, once
	cancel context.CancelFunc

	mu    sync.Mutex
	notes []note
	// service answers the plugin's service/call requests.
	service func(protocol.ServiceCallParams) (any, error)
	// responses sees every response the host reads, matched or not.
	responses chan *jsonrpc2.Response
}

type pipes struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipes) Close() error { return p.close() }

// lineWriter fails the test unless every Write is exactly one line: the
// wire's framing promise, which lets a host read a message per line even
// when writes from several goroutines race.
type lineWriter struct {
	t *testing.T
	w io.Writer
}

func (l lineWriter) Write(b []byte) (int, error) {
	if bytes.Count(b, []byte("\n")) != 1 || b[len(b)-1] != '\n' {
		l.t.Errorf("a Write that is not exactly one line: %.200q", b)
	}
	return l.w.Write(b)
}

// serve starts p over pipes and returns the fake host, initialized unless
// noInit. Cleanup closes stdin and requires Serve to return nil.
func serve(t *testing.T, p *Plugin, noInit bool) *host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{t: t, served: make(chan error, 1), cancel: cancel, responses: make(chan *jsonrpc2.Response, 100)}
	go func() {
		err := p.Serve(ctx, inR, lineWriter{t, outW})
		outW.Close() // the instance is gone: the host reads EOF
		h.served <- err
	}()
	stream := protocol.NewLineStream(pipes{outR, inW, func() error { inW.Close(); return outR.Close() }}, protocol.LineStreamOptions{})
	h.conn = jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(h.handle),
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)),
		jsonrpc2.OnRecv(func(_ *jsonrpc2.Request, r *jsonrpc2.Response) {
			if r != nil {
				select {
				case h.responses <- r:
				default: // a test that cares reads them
				}
			}
		}))
	t.Cleanup(func() {
		inW.Close() // stdin ends
		if err := <-h.served; err != nil {
			t.Errorf("Serve after stdin ended = %v, want nil", err)
		}
		h.conn.Close()
		cancel()
	})
	if !noInit {
		var res protocol.InitializeResult
		if err := h.conn.Call(t.Context(), protocol.MethodInitialize, protocol.InitializeParams{Protocol: protocol.Version}, &res); err != nil {
			t.Fatalf("initialize: %v", err)
		}
	}
	return h
}

// handle is the fake host's side: notifications are recorded on the
// reader, so one recorded before a response was read before it.
func (h *host) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var raw json.RawMessage
	if req.Params != nil {
		raw = *req.Params
	}
	if req.Notif {
		h.mu.Lock()
		h.notes = append(h.notes, note{req.Method, raw})
		h.mu.Unlock()
		return nil, nil
	}
	if req.Method != protocol.MethodServiceCall || h.service == nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no " + req.Method}
	}
	var p protocol.ServiceCallParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	res, err := h.service(p)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	return protocol.ServiceCallResult{Result: b}, nil
}

// call makes a request and requires success.
func (h *host) call(method string, params, result any) {
	h.t.Helper()
	if err := h.conn.Call(h.t.Context(), method, params, result); err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
}

// callErr makes a request that must fail, and returns its JSON-RPC error.
func (h *host) callErr(method string, params any) *jsonrpc2.Error {
	h.t.Helper()
	var res json.RawMessage
	err := h.conn.Call(h.t.Context(), method, params, &res)
	rerr, ok := err.(*jsonrpc2.Error)
	if !ok {
		h.t.Fatalf("%s = %s, %v; want a JSON-RPC error", method, res, err)
	}
	return rerr
}

func (h *host) notify(method string, params any) {
	h.t.Helper()
	if err := h.conn.Notify(h.t.Context(), method, params); err != nil {
		h.t.Fatalf("notify %s: %v", method, err)
	}
}

// notesOf returns the recorded notifications of one method, decoded.
func notesOf[T any](h *host, method string) []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []T
	for _, n := range h.notes {
		if n.method == method {
			var v T
			if err := json.Unmarshal(n.params, &v); err != nil {
				h.t.Fatalf("%s %s: %v", method, n.params, err)
			}
			out = append(out, v)
		}
	}
	return out
}
