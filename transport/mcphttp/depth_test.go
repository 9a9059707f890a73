package mcphttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
)

// deepServer answers every request with a message whose result nests
// depth levels deep, as JSON or as an event stream (split over data lines, its
// lines ended with CRLF, after an id field holding a quote, so that a
// check that does not split events as the sdk does misses it).
func deepServer(t *testing.T, depth int, sse bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := `{"jsonrpc":"2.0","id":1,"result":{"x":` + strings.Repeat("[", depth-2) + strings.Repeat("]", depth-2) + `}}`
		if !sse {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		half := len(msg) / 2
		fmt.Fprintf(w, "event: message\r\nid: \"x\r\ndata: %s\r\ndata: %s\r\n\r\n", msg[:half], msg[half:])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A remote server's message nested millions deep (4,000,000 overflowed
// the stack of a recursive decoder; 100,000 took it seconds) never reaches
// a decoder without a limit: the sdk's client checks the nesting of every
// message it decodes first (its internal/json, 1000 levels, the limit
// mcpbridge holds a stdio server to), and the session ends with one
// notice at once, whether the message comes as JSON or in an event stream.
func TestADeepMessageEndsTheSession(t *testing.T) {
	for _, sse := range []bool{false, true} {
		for _, depth := range []int{4_000_000, 100_000, 1001} {
			t.Run(fmt.Sprintf("sse=%v/depth=%d", sse, depth), func(t *testing.T) {
				srv := deepServer(t, depth, sse)
				log := &syncLog{}
				conn, err := mcphttp.New(mcphttp.Config{URL: srv.URL, Log: log}).Start(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Kill()
				conn.Write([]byte(initialize))
				done := make(chan error, 1)
				go func() { done <- conn.Wait() }()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "exceeded maximum nesting depth of 1000") {
						t.Errorf("Wait = %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the session did not end within 10s")
				}
				if n := strings.Count(log.String(), "nesting depth"); n != 1 {
					t.Errorf("%d notices in the log:\n%s", n, log.String())
				}
			})
		}
	}
	for _, sse := range []bool{false, true} {
		srv := deepServer(t, 1000, sse)
		conn, r := start(t, mcphttp.Config{URL: srv.URL})
		conn.Write([]byte(initialize))
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"result":{"x":[[[`) {
			t.Errorf("sse=%v, 1000 deep: %.40q, %v", sse, line, err)
		}
	}
}
