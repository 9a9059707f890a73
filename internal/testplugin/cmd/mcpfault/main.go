//go:build unix

// Command mcpfault runs the MCP server of package mcpfault on stdio, for
// the black-box tests: an MCP server that misbehaves on purpose.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
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
	seen := flag.String("requests", "", "with -http: append each request's method, path and Authorization header to `FILE`")
	flag.Parse()
	proc := mcpfault.Process{Exit: os.Exit, Freeze: freeze, Print: stray, Hangup: hangup}
	if *addr != "" {
		log.Fatal(serveHTTP(*addr, *addrFile, *token, *seen, proc))
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
func serveHTTP(addr, addrFile, token, seen string, proc mcpfault.Process) error {
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
				fmt.Fprintf(f, "%s %s %s\n", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				f.Close()
			}
			mu.Unlock()
		}
		if !strings.HasPrefix(r.URL.Path, "/mcp") {
			http.NotFound(w, r)
			return
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	return http.Serve(ln, mux)
}
