package oauth_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/internal/oauth"
)

// fakeDNS answers A queries for the names in hosts, and nothing else,
// on a connection the Go resolver dials (a stream: 2-byte lengths).
func fakeDNS(hosts map[string]netip.Addr) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for {
				var n uint16
				if binary.Read(server, binary.BigEndian, &n) != nil {
					return
				}
				q := make([]byte, n)
				if _, err := io.ReadFull(server, q); err != nil || len(q) < 12 {
					return
				}
				// The question: labels to a zero byte, then type and class.
				end, name := 12, []string{}
				for end < len(q) && q[end] != 0 {
					l := int(q[end])
					if end+1+l > len(q) {
						return
					}
					name = append(name, string(q[end+1:end+1+l]))
					end += 1 + l
				}
				end += 5
				if end > len(q) {
					return
				}
				qtype := binary.BigEndian.Uint16(q[end-4:])
				ip, ok := hosts[strings.Join(name, ".")]
				answer := ok && qtype == 1 && ip.Is4()
				resp := append([]byte{}, q[:2]...)                      // its ID
				resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // a response, recursion; one question
				if !ok {
					resp[3] |= 3 // NXDOMAIN
				}
				if answer {
					resp[7] = 1
				}
				resp = append(resp, q[12:end]...)
				if answer {
					a := ip.As4()
					resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
					resp = append(resp, a[:]...)
				}
				if binary.Write(server, binary.BigEndian, uint16(len(resp))) != nil {
					return
				}
				if _, err := server.Write(resp); err != nil {
					return
				}
			}
		}()
		return client, nil
	}
}

// Authorization reaches no address that is not public, a name resolving
// to one included; loopback it reaches.
func TestAuthorizationReachesNoPrivateAddress(t *testing.T) {
	hosts := map[string]netip.Addr{
		"loop.test":     netip.MustParseAddr("127.0.0.1"),
		"any.test":      netip.MustParseAddr("0.0.0.0"), // connecting to it reaches this machine
		"metadata.test": netip.MustParseAddr("169.254.169.254"),
		"intranet.test": netip.MustParseAddr("10.0.0.7"),
		"cgnat.test":    netip.MustParseAddr("100.64.0.1"),
	}
	saved := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: fakeDNS(hosts)}
	t.Cleanup(func() { net.DefaultResolver = saved })

	reached := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"x"}`)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// Through the default transport, with no proxy configured (as
	// the sdk's own check needs too).
	h, err := oauth.New(oauth.Options{Server: "s", URL: "https://mcp.example/mcp", Store: oauth.Store{Dir: t.TempDir()},
		HTTP: &http.Client{Transport: &http.Transport{}}})
	if err != nil {
		t.Fatal(err)
	}
	c := h.Client()
	get := func(host string) error {
		resp, err := c.Get("http://" + net.JoinHostPort(host, port) + "/.well-known/oauth-authorization-server")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("loop.test"); err != nil {
		t.Errorf("loopback: %v", err)
	}
	<-reached
	for _, host := range []string{"any.test", "metadata.test", "intranet.test", "cgnat.test"} {
		err := get(host)
		if err == nil || !strings.Contains(err.Error(), "is not a public address") {
			t.Errorf("%s (%s): %v, want refused as not public", host, hosts[host], err)
		}
	}
	select {
	case <-reached:
		t.Error("a request through a name of a non-public address reached the server")
	default:
	}
}

// Through a proxy, the address dialled is the proxy's: nothing is
// refused, as the sdk refuses nothing then.
func TestAuthorizationThroughAProxy(t *testing.T) {
	saved := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: fakeDNS(map[string]netip.Addr{"proxy.test": netip.MustParseAddr("0.0.0.0")})}
	t.Cleanup(func() { net.DefaultResolver = saved })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy, _ := url.Parse("http://proxy.test:" + port)
	h, err := oauth.New(oauth.Options{Server: "s", URL: "https://mcp.example/mcp", Store: oauth.Store{Dir: t.TempDir()},
		HTTP: &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Client().Get("http://as.example/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	resp.Body.Close()
}
