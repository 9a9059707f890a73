package oauth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// publicOnly is rt, its connections refused to addresses that are not
// public, as the go-sdk refuses them to its OAuth discovery: it does so
// only for a client whose transport is a plain *http.Transport, and
// metadataTap is not one, so the check is made again here, for every
// request of the authorization. A name is checked by the address it is
// dialled at (a name resolving to 169.254.169.254 is refused too).
// Loopback is allowed, as the sdk allows it (a server and its
// authorization server on this machine). A transport that dials its own
// way or through a proxy is left as it is, as the sdk leaves it.
func publicOnly(rt http.RoundTripper) http.RoundTripper {
	t, ok := rt.(*http.Transport)
	if !ok || t.DialContext != nil || t.DialTLSContext != nil || proxied(t) {
		return rt
	}
	t = t.Clone()
	t.DialContext = (&net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = address
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("oauth: %q is not an IP address", host)
			}
			if !public(ip) {
				return fmt.Errorf("oauth: %s is not a public address: authorization does not reach it", ip)
			}
			return nil
		},
	}).DialContext
	return t
}

// proxied reports whether t sends requests through a proxy: then the
// address dialled is the proxy's, and checking it says nothing.
func proxied(t *http.Transport) bool {
	if t.Proxy == nil {
		return false
	}
	req, err := http.NewRequest(http.MethodGet, "https://authorization.example/", nil)
	if err != nil {
		return false
	}
	u, err := t.Proxy(req)
	return err == nil && u != nil
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// public reports whether ip may be reached by authorization: loopback,
// or none of private (RFC 1918, fc00::/7), link-local (the cloud
// metadata address among them), multicast, unspecified or CGNAT.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsMulticast(), cgnat.Contains(ip):
		return false
	}
	return true
}
