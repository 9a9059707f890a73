package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestAllowed(t *testing.T) {
	allow := []string{"registry.npmjs.org:443", "*:8443", "[::1]:80"}
	for target, want := range map[string]bool{
		"registry.npmjs.org:443":  true,
		"REGISTRY.npmjs.org.:443": true,
		"registry.npmjs.org:80":   false,
		"example.com:443":         false,
		"example.com:8443":        true,
		"[::1]:80":                true,
		"nonsense":                false,
	} {
		if got := Allowed(allow, target); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", target, got, want)
		}
	}
	if !Allowed([]string{"*"}, "anything:1") {
		t.Error(`"*" does not allow everything`)
	}
}

// A granted target is tunnelled to (CONNECT) or fetched (plain HTTP); any
// other is refused with why, and reported once.
func TestProxy(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	var refused []string
	p, err := Start([]string{ln.Addr().String()}, "sandbox.x.network", func(target string) { refused = append(refused, target) })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	network, addr := "tcp", p.Addr()
	ask := func(request string) string {
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, request)
		b, _ := io.ReadAll(bufio.NewReader(c))
		return string(b)
	}
	target := ln.Addr().String()
	if got := ask("GET http://" + target + "/plain HTTP/1.1\r\nHost: " + target + "\r\n\r\n"); !strings.Contains(got, "hello /plain") {
		t.Errorf("plain HTTP: %q", got)
	}
	if got := ask("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); !strings.Contains(got, "200 Connection established") || !strings.Contains(got, "hello /tunnel") {
		t.Errorf("CONNECT: %q", got)
	}
	for range 2 {
		if got := ask("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"); !strings.Contains(got, "403") || !strings.Contains(got, "example.com:443 is not granted to this plugin; sandbox.x.network grants it") {
			t.Errorf("refused: %q", got)
		}
	}
	if len(refused) != 1 || refused[0] != "example.com:443" {
		t.Errorf("refused reported %q, want example.com:443 once", refused)
	}
	// The unix socket, by which a shepherd in the plugin's network
	// namespace reaches it, serves the same.
	network, addr = "unix", p.Socket()
	if got := ask("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\nGET /unix HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); !strings.Contains(got, "hello /unix") {
		t.Errorf("CONNECT by the unix socket: %q", got)
	}
	if got := ask("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"); !strings.Contains(got, "403") {
		t.Errorf("refused by the unix socket: %q", got)
	}
	p.Close()
	if _, err := os.Stat(addr); !os.IsNotExist(err) {
		t.Errorf("the unix socket outlives Close: %v", err)
	}
}
