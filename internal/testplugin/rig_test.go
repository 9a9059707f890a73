package testplugin

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// rig is a fake host driving one instance of Serve over io.Pipe pairs,
// the way transport/mem runs it, with sourcegraph/jsonrpc2 over
// protocol's LineStream as the bridge speaks.
type rig struct {
	t      *testing.T
	conn   *jsonrpc2.Conn
	stdin  *io.PipeWriter
	served chan error  // Serve's answer, once
	stderr chan string // every Write to stderr
	resps  chan *jsonrpc2.Response

	mu      sync.Mutex
	notes   []note
	skipped []string
	service func(protocol.ServiceCallParams) (any, error)
}

type note struct {
	method string
	params json.RawMessage
}

type pipes struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipes) Close() error { return p.close() }

// chanWriter hands every Write to a channel, so a test waits for output
// rather than sleeping for it.
type chanWriter chan string

func (c chanWriter) Write(b []byte) (int, error) {
	c <- string(b)
	return len(b), nil
}

// start runs an instance and completes the handshake with config. Cleanup
// ends stdin and waits for Serve.
func start(t *testing.T, config string) *rig {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rig{t: t, stdin: inW, served: make(chan error, 1), stderr: make(chan string, 100), resps: make(chan *jsonrpc2.Response, 100)}
	go func() {
		err := Serve(context.Background(), inR, outW, chanWriter(r.stderr))
		outW.Close()
		r.served <- err
	}()
	stream := protocol.NewLineStream(pipes{outR, inW, func() error { inW.Close(); return outR.Close() }}, protocol.LineStreamOptions{
		Skipped: func(line []byte, _ error) {
			r.mu.Lock()
			r.skipped = append(r.skipped, string(line))
			r.mu.Unlock()
		},
	})
	r.conn = jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(r.handle),
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)),
		jsonrpc2.OnRecv(func(_ *jsonrpc2.Request, resp *jsonrpc2.Response) {
			if resp != nil {
				select {
				case r.resps <- resp:
				default: // only the tests that read them care
				}
			}
		}))
	t.Cleanup(func() {
		r.conn.Close()
		<-r.served
	})
	var res protocol.InitializeResult
	params := protocol.InitializeParams{Protocol: protocol.Version, Env: map[string]string{"A": "1"}}
	if config != "" {
		params.Config = json.RawMessage(config)
	}
	r.call(protocol.MethodInitialize, params, &res)
	if res.Name != Name || res.Version != Version || res.Protocol != protocol.Version {
		t.Fatalf("handshake = %+v", res)
	}
	return r
}

func (r *rig) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var raw json.RawMessage
	if req.Params != nil {
		raw = *req.Params
	}
	if req.Notif {
		r.mu.Lock()
		r.notes = append(r.notes, note{req.Method, raw})
		r.mu.Unlock()
		return nil, nil
	}
	var p protocol.ServiceCallParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	r.mu.Lock()
	service := r.service
	r.mu.Unlock()
	res, err := service(p)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	return protocol.ServiceCallResult{Result: b}, nil
}

// call makes a request that must succeed.
func (r *rig) call(method string, params, result any) {
	r.t.Helper()
	if err := r.conn.Call(r.t.Context(), method, params, result); err != nil {
		r.t.Fatalf("%s: %v", method, err)
	}
}

// tool calls a tool and returns its output.
func (r *rig) tool(callID, name, input string) (out struct {
	Text    string
	IsError bool
	Output  json.RawMessage
}) {
	r.t.Helper()
	var res struct {
		Output json.RawMessage `json:"output"`
	}
	p := protocol.ToolCallParams{CallID: callID, Name: name}
	if input != "" {
		p.Input = json.RawMessage(input)
	}
	r.call(protocol.MethodToolCall, p, &res)
	var o struct {
		Parts   []struct{ Text string }
		IsError bool
	}
	json.Unmarshal(res.Output, &o)
	for _, p := range o.Parts {
		out.Text += p.Text
	}
	out.IsError, out.Output = o.IsError, res.Output
	return out
}

func (r *rig) notify(method string, params any) {
	r.t.Helper()
	if err := r.conn.Notify(r.t.Context(), method, params); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) notesOf(method string) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []json.RawMessage
	for _, n := range r.notes {
		if n.method == method {
			out = append(out, n.params)
		}
	}
	return out
}
