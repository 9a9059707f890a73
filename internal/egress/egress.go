// Package egress is the proxy through which a sandboxed exec plugin
// reaches the hosts it is granted by name (sandbox.<name>.network), and
// nothing else: an HTTP proxy on a loopback port of bingo's own, which
// the plugin is told of by the usual variables (HTTPS_PROXY, HTTP_PROXY,
// ALL_PROXY, and NODE_USE_ENV_PROXY for Node's own fetch). It takes a
// CONNECT to host:port, the tunnel every HTTPS client asks for, and a
// plain HTTP request by its absolute URL, one a connection; the host
// resolves names, so the plugin needs no DNS. A target not granted is
// answered 403, with why, and reported (Refused) once per target.
//
// The plugin itself has no other way out: in its network namespace the
// only thing it can reach is the port its shepherd forwards here (see
// internal/shepherd). The shepherd, in that namespace too, reaches the
// proxy by a unix socket (Socket), whose path no network namespace
// hides; the loopback port is for a plugin without a namespace of its
// own.
package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dialTimeout bounds the connection to a granted host.
const dialTimeout = 30 * time.Second

// Proxy is one plugin's egress proxy.
type Proxy struct {
	ln, unix net.Listener
	dir      string // holds the unix socket
	allow    []string
	refused  func(target string)
	setting  string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	said   map[string]bool
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a loopback port and serves the plugin whose grant is
// allow ("host:port" each, a host "*" for any host on that port). refused
// is called once for each target refused; setting is the key that grants
// more, for the refusal's text.
func Start(allow []string, setting string, refused func(target string)) (*Proxy, error) {
	// A directory of its own: only the person's processes reach the
	// socket, and removing the directory removes it.
	dir, err := os.MkdirTemp("", "bingo-egress-")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	unix, err := net.Listen("unix", filepath.Join(dir, "proxy"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = unix.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{ln: ln, unix: unix, dir: dir, allow: allow, refused: refused, setting: setting, conns: map[net.Conn]struct{}{}, said: map[string]bool{}}
	p.wg.Add(2)
	go p.serve(ln)
	go p.serve(unix)
	return p, nil
}

// Addr is the proxy's address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Socket is the path of the proxy's unix socket, which serves as Addr
// does.
func (p *Proxy) Socket() string { return p.unix.Addr().String() }

// Close stops the proxy and ends every connection through it, and returns
// once nothing of it runs.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	_ = p.unix.Close()
	p.wg.Wait()
	_ = os.RemoveAll(p.dir)
	return err
}

// Allowed reports whether target ("host:port") is granted.
func Allowed(allow []string, target string) bool {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return false
	}
	for _, a := range allow {
		if a == "*" {
			return true
		}
		ah, ap, err := net.SplitHostPort(a)
		if err != nil || ap != port {
			continue
		}
		if ah == "*" || strings.EqualFold(strings.TrimSuffix(ah, "."), strings.TrimSuffix(host, ".")) {
			return true
		}
	}
	return false
}

func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// track remembers c, to be closed by Close; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// handle serves one connection of the plugin: one CONNECT tunnel, or one
// plain HTTP request.
func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	target := req.Host
	if req.Method != http.MethodConnect {
		if req.URL == nil || req.URL.Host == "" {
			reply(c, http.StatusBadRequest, "bingo's egress proxy takes CONNECT, or a request by its absolute URL")
			return
		}
		target = req.URL.Host
		if req.URL.Port() == "" {
			target = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	if !Allowed(p.allow, target) {
		reply(c, http.StatusForbidden, fmt.Sprintf("bingo: %s is not granted to this plugin; %s grants it", target, p.setting))
		p.refuse(target)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
	cancel()
	if err != nil {
		reply(c, http.StatusBadGateway, "bingo: "+err.Error())
		return
	}
	if !p.track(up) {
		_ = up.Close()
		return
	}
	defer p.untrack(up)
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		// What the client sent after its CONNECT is the tunnel's.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
	} else {
		req.RequestURI, req.Close = "", true
		req.Header.Del("Proxy-Connection")
		req.Header.Del("Proxy-Authorization")
		if err := req.Write(up); err != nil {
			return
		}
	}
	splice(c, up)
}

// refuse reports target once.
func (p *Proxy) refuse(target string) {
	p.mu.Lock()
	first := !p.said[target]
	p.said[target] = true
	p.mu.Unlock()
	if first && p.refused != nil {
		p.refused(target)
	}
}

// splice copies both ways until either side ends, then ends both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

func reply(c net.Conn, code int, text string) {
	_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(code)+" "+http.StatusText(code)+"\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+
		strconv.Itoa(len(text)+1)+"\r\n\r\n"+text+"\n")
}
