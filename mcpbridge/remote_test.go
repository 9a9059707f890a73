package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
)

// remoteServer is a go-sdk server over Streamable HTTP with one tool,
// where, whose input's region the tool's schema binds to the header
// Mcp-Param-Region; stateless, as the sdk serves protocol 2026-07-28, or
// not (2025-11-25 and before). refuse answers the first n server/discover requests
// with HTTP 400 and -32022, naming supported as the versions the server
// speaks. seen gets each request's method and headers.
type remoteServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	seen     []http.Header
	methods  []string
	sessions chan *mcp.ServerSession
}

func newRemoteServer(t *testing.T, stateless bool, refuse int, supported []string) *remoteServer {
	rs := &remoteServer{sessions: make(chan *mcp.ServerSession, 1)}
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			select {
			case rs.sessions <- req.Session:
			default:
			}
		},
	})
	s.AddTool(&mcp.Tool{Name: "where", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	rs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		method := r.Method + " " + m.Method
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Clone())
		rs.methods = append(rs.methods, strings.TrimSpace(method))
		refused := m.Method == "server/discover" && refuse > 0
		if refused {
			refuse--
		}
		rs.mu.Unlock()
		if refused {
			data, _ := json.Marshal(map[string]any{"supported": supported, "requested": r.Header.Get("Mcp-Protocol-Version")})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version", "data": json.RawMessage(data)}})
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.srv.Close)
	return rs
}

// requests is how many requests of method ("POST tools/call", "GET")
// the server has had, and the headers of the last.
func (rs *remoteServer) requests(method string) (int, http.Header) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n, last := 0, http.Header(nil)
	for i, m := range rs.methods {
		if m == method {
			n, last = n+1, rs.seen[i]
		}
	}
	return n, last
}

func remoteRig(t *testing.T, rs *remoteServer) *rig {
	return newRig(t, rigOpts{inner: mcphttp.New(mcphttp.Config{URL: rs.srv.URL})})
}

// A server/discover refused with HTTP 400 and -32022 crosses whole (code,
// message and the versions the server supports): the sdk asks again in a
// version the server speaks, rather than falling back to initialize as
// it does for a server that cannot be reached.
func TestRemoteVersionRefusedCrossesWhole(t *testing.T) {
	rs := newRemoteServer(t, true, 1, []string{"2026-07-28"})
	r := remoteRig(t, rs)
	if out, err := r.call(context.Background(), "where", `{"region":"eu"}`, nil); err != nil || texts(out) != "here" {
		t.Fatalf("where = %q, %v", texts(out), err)
	}
	if n, _ := rs.requests("POST server/discover"); n != 2 {
		t.Errorf("%d server/discover requests; want 2, the second after the refusal", n)
	}
	if n, _ := rs.requests("POST initialize"); n != 0 {
		t.Errorf("bingo fell back to initialize:\n%s", r.log.String())
	}
}

// The sdk's own transport serves the sdk's client session: a tool call
// carries the Mcp-Param-* headers its tool's schema binds, with the
// protocol version, method and name headers.
func TestRemoteRequestHeaders(t *testing.T) {
	rs := newRemoteServer(t, true, 0, nil)
	r := remoteRig(t, rs)
	if out, err := r.call(context.Background(), "where", `{"region":"us-west1"}`, nil); err != nil || texts(out) != "here" {
		t.Fatalf("where = %q, %v", texts(out), err)
	}
	_, h := rs.requests("POST tools/call")
	for k, want := range map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Method": "tools/call", "Mcp-Name": "where", "Mcp-Protocol-Version": "2026-07-28"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// A session of a protocol before 2026-07-28 opens its own stream (a GET)
// once initialized, as the sdk's client does: what the server sends on
// it outside any request (an elicitation) arrives, and is answered (here
// declined: no call to ask it on).
func TestRemoteLegacyStream(t *testing.T) {
	rs := newRemoteServer(t, false, 1, []string{"2025-11-25"})
	r := remoteRig(t, rs)
	if out, err := r.call(context.Background(), "where", `{}`, nil); err != nil || texts(out) != "here" {
		t.Fatalf("where = %q, %v", texts(out), err)
	}
	var ss *mcp.ServerSession
	select {
	case ss = <-rs.sessions:
	case <-time.After(10 * time.Second):
		t.Fatal("no session initialized")
	}
	if v := ss.InitializeParams().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("protocol %s", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "a question outside any call", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
	if err != nil {
		t.Fatalf("the elicitation on the session's own stream: %v (GET requests: %d)", err, func() int { n, _ := rs.requests("GET"); return n }())
	}
	if res.Action != "decline" {
		t.Errorf("action %q, want decline", res.Action)
	}
}
