//go:build unix

// Command mcpfault runs the MCP server of package mcpfault on stdio, for
// the black-box tests: an MCP server that misbehaves on purpose.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
)

func main() {
	// Stopped, the process answers nothing more; the handler waits, so
	// its own answer cannot slip out while the signal lands.
	freeze := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		select {}
	}
	stray := func(line string) { fmt.Fprintln(os.Stdout, line) }
	hangup := func() { _ = os.Stdout.Close() }
	addr := flag.String("http", "", "serve Streamable HTTP on `ADDR` (127.0.0.1:0 picks a port) rather than stdio")
	addrFile := flag.String("addr-file", "", "with -http: write the address listened on to `FILE`")
	token := flag.String("token", "", "with -http: answer 401 to a request without Authorization: Bearer `TOKEN`")
	seen := flag.String("requests", "", "with -http: append each request's method, path, Authorization and X- headers to `FILE`")
	redirect := flag.String("redirect", "", "with -http: answer every request 307 to `ORIGIN` and the request's path")
	huge := flag.Int("huge", 0, "with -http: answer every tools/call with one JSON-RPC answer of `MIB` MiB")
	hugeSSE := flag.Bool("huge-sse", false, "with -huge: send that answer as one server-sent event")
	huge400 := flag.Bool("huge-400", false, "with -huge: send it instead as the 400 answer to notifications/initialized, the first request carrying the session's id")
	flag.Parse()
	proc := mcpfault.Process{Exit: os.Exit, Freeze: freeze, Print: stray, Hangup: hangup}
	if *addr != "" {
		log.Fatal(serveHTTP(*addr, *addrFile, *token, *seen, *redirect, *huge, *hugeSSE, *huge400, proc))
	}
	proc.Sideband = mcpfault.NewSideband(os.Stdin, os.Stdout)
	t := &mcp.IOTransport{Reader: io.NopCloser(proc.Sideband), Writer: os.Stdout}
	if err := mcpfault.New(proc).Run(context.Background(), t); err != nil {
		log.Fatal(err)
	}
}

// serveHTTP serves the server as a remote one: each session its own
// server, as a Streamable HTTP endpoint at /mcp. It has no stdout to
// print junk on nor close.
func serveHTTP(addr, addrFile, token, seen, redirect string, huge int, hugeSSE, huge400 bool, proc mcpfault.Process) error {
	proc.Print, proc.Hangup = func(string) {}, nil
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if addrFile != "" {
		// Written whole under another name first: a reader never sees
		// half an address.
		tmp := addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, addrFile); err != nil {
			return err
		}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpfault.New(proc) }, nil)
	mux := http.NewServeMux()
	var mu sync.Mutex
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if seen != "" {
			mu.Lock()
			if f, err := os.OpenFile(seen, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				// And any X- header after it, for a test of what else
				// a client sends.
				line := fmt.Sprintf("%s %s %s", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				for _, k := range slices.Sorted(maps.Keys(r.Header)) {
					if strings.HasPrefix(k, "X-") {
						line += " " + k + "=" + r.Header.Get(k)
					}
				}
				fmt.Fprintln(f, line)
				f.Close()
			}
			mu.Unlock()
		}
		if redirect != "" {
			http.Redirect(w, r, redirect+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/mcp") {
			http.NotFound(w, r)
			return
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if huge > 0 && r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil {
				switch {
				case huge400 && m.Method == "notifications/initialized":
					answerHuge(w, http.StatusBadRequest, m.ID, huge, hugeSSE)
					return
				case !huge400 && m.Method == "tools/call":
					answerHuge(w, http.StatusOK, m.ID, huge, hugeSSE)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
	return http.Serve(ln, mux)
}

// answerHuge answers the call id, with status, with one text of mib MiB,
// written as it goes (the server never holds it): as a JSON body, or as
// one server-sent event.
func answerHuge(w http.ResponseWriter, status int, id json.RawMessage, mib int, sse bool) {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		head = "event: message\ndata: " + head
		tail += "\n\n"
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range mib {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, tail)
}
