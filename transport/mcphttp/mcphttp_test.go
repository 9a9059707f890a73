package mcphttp_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"

// server serves a go-sdk MCP server at /mcp, refusing a request without
// Authorization: Bearer token (when token is set); seen gets each
// request's Authorization header.
func server(t *testing.T, token string, seen chan<- string) *httptest.Server {
	srv := httptest.NewServer(handler(token, seen))
	t.Cleanup(srv.Close)
	return srv
}

// handler is server's.
func handler(token string, seen chan<- string) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			select {
			case seen <- r.Header.Get("Authorization"):
			default:
			}
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// syncLog is a log the session's goroutines may write while the test reads.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, cfg mcphttp.Config) (transport.Conn, *bufio.Reader) {
	t.Helper()
	log := &syncLog{}
	cfg.Log = log
	conn, err := mcphttp.New(cfg).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Kill()
		if strings.Contains(log.String(), "secret") {
			t.Errorf("the log holds a header's value: %s", log.String())
		}
	})
	return conn, bufio.NewReader(conn)
}

// A session: the messages written go to the server with the entry's
// headers, its answers come back one a line, and a kill ends it.
func TestSession(t *testing.T) {
	seen := make(chan string, 16)
	srv := server(t, "secret", seen)
	conn, r := start(t, mcphttp.Config{URL: srv.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer secret"}})
	if _, err := conn.Write([]byte(initialize)); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"protocolVersion":"2025-06-18"`) || !strings.Contains(line, `"id":1`) {
		t.Fatalf("read %q, %v; want the answer to initialize", line, err)
	}
	if got := <-seen; got != "Bearer secret" {
		t.Errorf("Authorization %q", got)
	}
	conn.Kill()
	if err := conn.Wait(); !errors.Is(err, transport.ErrKilled) {
		t.Errorf("Wait after Kill = %v", err)
	}
}

// Without Config.OAuth, a 401 ends the session with one error that says
// why, naming where to authorize (the resource metadata its
// WWW-Authenticate names).
func TestUnauthorized(t *testing.T) {
	srv := server(t, "secret", nil)
	conn, r := start(t, mcphttp.Config{URL: srv.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer wrong-secret"}})
	conn.Write([]byte(initialize))
	if _, err := r.ReadString('\n'); err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "refused the Authorization header of its entry (see https://as.example/.well-known/oauth-protected-resource)") {
		t.Errorf("read error %v", err)
	}
	if err := conn.Wait(); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Wait = %v", err)
	}
}

// Nothing there: the session ends at once rather than leaving the call
// to its deadline.
func TestUnreachable(t *testing.T) {
	srv := server(t, "", nil)
	url := srv.URL + "/mcp"
	srv.Close()
	conn, r := start(t, mcphttp.Config{URL: url})
	conn.Write([]byte(initialize))
	done := make(chan error, 1)
	go func() { _, err := r.ReadString('\n'); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cannot reach the MCP server") {
			t.Errorf("read error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end within 10s")
	}
}

// A server that restarted does not know the session: it answers 404 (the
// spec's word) or, as the reference servers do (server-everything), 400 to
// a request carrying the session's id. Either ends the session at once,
// rather than every later request being refused the same.
func TestForgottenSession(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
			var restarted atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if restarted.Load() && r.Header.Get("Mcp-Session-Id") != "" {
					http.Error(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`, status)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			conn, r := start(t, mcphttp.Config{URL: srv.URL + "/mcp"})
			conn.Write([]byte(initialize))
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			conn.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}` + "\n"))
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			restarted.Store(true)
			conn.Write([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}` + "\n"))
			done := make(chan error, 1)
			go func() {
				var err error
				for err == nil {
					_, err = r.ReadString('\n') // the answer to tools/list may come first, as an error
				}
				done <- err
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not end within 10s")
			}
			if err := conn.Wait(); err == nil || errors.Is(err, transport.ErrKilled) {
				t.Errorf("Wait = %v; want why the session ended", err)

			}
		})
	}
}

// A redirect to another origin, or from https to http, is refused: the
// session ends saying where it pointed, and the place it pointed to hears
// nothing, least of all the token.
func TestRedirectElsewhere(t *testing.T) {
	heard := make(chan string, 16)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard <- r.Header.Get("Authorization")
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	moved := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}
	plain := httptest.NewServer(http.HandlerFunc(moved))
	t.Cleanup(plain.Close)
	tls := httptest.NewTLSServer(http.HandlerFunc(moved))
	t.Cleanup(tls.Close)
	for _, from := range []*httptest.Server{plain, tls} {
		conn, r := start(t, mcphttp.Config{URL: from.URL + "/mcp", Client: from.Client(), Headers: map[string]string{"Authorization": "Bearer secret"}})
		conn.Write([]byte(initialize))
		if _, err := r.ReadString('\n'); err == nil || !strings.Contains(err.Error(), "redirected to "+elsewhere.URL+"/mcp: refused") {
			t.Errorf("%s: read error %v", from.URL, err)
		}
	}
	select {
	case h := <-heard:
		t.Errorf("the redirect's target was asked (Authorization %q)", h)
	default:
	}
}

// upgrading answers a plain http request with a 307 to its https form at
// the same host and port, as a server upgrading its scheme does, and
// sends the https one on to base.
type upgrading struct{ base http.RoundTripper }

func (u upgrading) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		to := *req.URL
		to.Scheme = "https"
		return &http.Response{StatusCode: http.StatusTemporaryRedirect, Header: http.Header{"Location": {to.String()}},
			Body: http.NoBody, Request: req}, nil
	}
	return u.base.RoundTrip(req)
}

// The https upgrade of the configured origin is the origin: it is followed
// with the entry's headers, so the token the person gave reaches it (the
// server refuses a request without it).
func TestUpgradeKeepsHeaders(t *testing.T) {
	seen := make(chan string, 16)
	tls := httptest.NewTLSServer(handler("secret", seen))
	t.Cleanup(tls.Close)
	client := tls.Client()
	client.Transport = upgrading{client.Transport}
	plain := "http://" + strings.TrimPrefix(tls.URL, "https://") + "/mcp"
	conn, r := start(t, mcphttp.Config{URL: plain, Client: client, Headers: map[string]string{"Authorization": "Bearer secret"}})
	conn.Write([]byte(initialize))
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("answer %q, error %v", line, err)
	}
	if got := <-seen; got != "Bearer secret" {
		t.Errorf("the upgraded request carried Authorization %q", got)
	}
}

// Which redirects keep the headers: the same origin, or http to https on
// the same host.
func TestFollowable(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"http://a:1/mcp", "http://a:1/other", true},
		{"http://a/mcp", "https://a/mcp", true},
		{"http://a:8080/mcp", "https://a:8080/mcp", true},
		{"https://a/mcp", "https://A:443/mcp", true},
		{"http://a:1/mcp", "http://a:2/mcp", false},
		{"http://a/mcp", "http://b/mcp", false},
		{"https://a/mcp", "http://a/mcp", false},
		{"https://a/mcp", "https://a.evil/mcp", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		if got := mcphttp.Followable(from, to); got != tc.want {
			t.Errorf("%s to %s: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// One answer past the cap ends the session having read at most the cap
// (and a byte), however long the body; an event stream is held to the
// cap event by event.
func TestAnswerCap(t *testing.T) {
	const max = 1 << 20
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"` + strings.Repeat("a", 64<<10))
		for range 1024 { // 64 MiB, unless the reader stops
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	conn, r := start(t, mcphttp.Config{URL: srv.URL + "/mcp", Shown: "http://${HOST}/mcp", MaxMessage: max})
	conn.Write([]byte(initialize))
	if _, err := r.ReadString('\n'); err == nil || !strings.Contains(err.Error(), "the MCP server at http://${HOST}/mcp sent an answer of more than 1 MiB, the cap on one message: refused") {
		t.Errorf("read error %v", err)
	}
	if got := sent.Load(); got >= 32<<20 {
		t.Errorf("the server wrote %d bytes: the body was read past the cap", got)
	}
}
