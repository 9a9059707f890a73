// Package mcphttp reaches a remote MCP server over Streamable HTTP (the
// official go-sdk's client transport) as a [transport.Transport]: each
// instance is one MCP session, and its Conn carries the session's JSON-RPC
// messages as lines, as a stdio server's stdout and stdin would. Package
// mcpbridge translates for it exactly as for a process, so a remote server
// meets the same deadlines, notices, trace and respawn; with no process to
// kill, a kill drops the session (an HTTP DELETE), and the next start opens
// a new one.
//
// The entry's headers go with every request to the server's origin (its
// scheme, host and port) and are never written anywhere. A redirect to
// another origin, or from https to http, is not followed: it ends the
// session with one error saying where it pointed, so that the person's
// token never reaches a host they did not name, nor crosses the network
// in clear. What the log and notices show of the URL is Config.Shown:
// the URL as the person wrote it, its ${VAR}s unexpanded, with its
// userinfo and secret-looking query values hidden.
//
// Every answer is read under a cap (Config.MaxMessage, the stdio line
// cap by default): a JSON body past it, or one server-sent event past it,
// ends the session with an error having cost at most about the cap,
// however much the server sends. A 401 or 403 ends the session with one error saying that bingo
// does not do OAuth. A request that cannot reach the server ends the
// session, as does a server that forgot it (it restarted: 404, or 400 as
// the reference servers answer): the call fails at once, and the next use
// starts a new session. A request the
// server refuses otherwise is answered with a JSON-RPC error.
//
// One limit: a server that negotiates a protocol before 2026-07-28 may
// send messages outside any request's response, on a stream of its own
// (an HTTP GET) that the sdk opens only for its own client sessions; those
// messages do not arrive here. What a server sends while answering a
// request (progress, logging, sampling, elicitation) does.
package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// Config says which server, and how to reach it.
type Config struct {
	URL     string            // the server's Streamable HTTP endpoint
	Headers map[string]string // sent with every request to URL's origin (a bearer token); never logged
	// Shown is the URL as notices and the log show it: the entry's URL as
	// written, before its ${VAR}s were expanded (an expanded variable
	// may be a secret). "" shows URL. Either way its userinfo and
	// secret-looking query values are hidden (render.URL).
	Shown string
	// MaxMessage caps one message from the server, in bytes: a JSON
	// answer's body, or one server-sent event. 0 is protocol.DefaultMaxLine,
	// the cap on a stdio server's line.
	MaxMessage int
	Log        io.Writer // the plugin's log, for what goes wrong; nil discards
	// Client makes the requests; nil is one with no overall timeout (a
	// response stream lasts as long as its call).
	Client *http.Client
}

// New returns the transport.
func New(cfg Config) transport.Transport {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = protocol.DefaultMaxLine
	}
	if cfg.Shown == "" {
		cfg.Shown = cfg.URL
	}
	cfg.Shown = render.URL(cfg.Shown)
	return &remote{cfg: cfg}
}

type remote struct{ cfg Config }

func (r *remote) Kind() string { return "http" }

// Start opens a session's connection; the first message sent reaches the
// server.
func (r *remote) Start(ctx context.Context) (transport.Conn, error) {
	origin, err := url.Parse(r.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("the MCP server's URL %s: %v", r.cfg.Shown, scrubbed(err, r.cfg.URL, r.cfg.Shown))
	}
	c := &conn{url: r.cfg.Shown, log: r.cfg.Log, done: make(chan struct{}), out: make(chan []byte, 64)}
	c.scrub = strings.NewReplacer(r.cfg.URL, r.cfg.Shown, origin.String(), r.cfg.Shown, origin.Redacted(), r.cfg.Shown)
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	base := r.cfg.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := *r.cfg.Client
	client.Transport = &headers{base: base, set: r.cfg.Headers, origin: origin, max: int64(r.cfg.MaxMessage), c: c}
	check := client.CheckRedirect
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !followable(origin, req.URL) {
			err := fmt.Errorf("the MCP server at %s redirected to %s: refused, since bingo sends your headers only to the server you configured and never from https to http; configure the URL it redirects to instead, if you trust it",
				c.url, render.URL(req.URL.Scheme+"://"+req.URL.Host+req.URL.Path))
			c.end(err)
			return err
		}
		if check != nil {
			return check(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	st := &mcp.StreamableClientTransport{Endpoint: r.cfg.URL, HTTPClient: &client, MaxEventSize: r.cfg.MaxMessage}
	mc, err := st.Connect(c.ctx)
	if err != nil {
		c.cancel()
		return nil, c.scrubbed(err)
	}
	c.mc = mc
	c.pr, c.pw = io.Pipe()
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

// followable reports whether a redirect from the configured URL to to
// may be followed with the entry's headers: to the same origin, or from
// http to https on the same host (the same port, or the default ports).
// Go's client drops Authorization on a redirect to another host, but the
// round tripper would put every header back: such a redirect is refused
// rather than followed bare, since a server that moved is for the person
// to configure anew.
func followable(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	switch {
	case from.Scheme == to.Scheme:
		return port(from) == port(to)
	case from.Scheme == "http" && to.Scheme == "https":
		return port(from) == port(to) || port(from) == "80" && port(to) == "443"
	}
	return false
}

// port is u's port, its scheme's default if it names none.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// sameOrigin reports whether u is at origin's scheme, host and port.
func sameOrigin(origin, u *url.URL) bool {
	return origin.Scheme == u.Scheme && strings.EqualFold(origin.Hostname(), u.Hostname()) && port(origin) == port(u)
}

// scrubbed is err's text with the URL as expanded replaced by how it is
// shown.
func scrubbed(err error, real, shown string) string {
	return strings.ReplaceAll(err.Error(), real, shown)
}

// scrubbedError is an error whose text no longer holds the URL as
// expanded, and which still is what it wraps.
type scrubbedError struct {
	msg string
	err error
}

func (e scrubbedError) Error() string { return e.msg }
func (e scrubbedError) Unwrap() error { return e.err }

// scrubbed is err with the URL as expanded replaced, in its text, by the
// URL as shown.
func (c *conn) scrubbed(err error) error {
	return scrubbedError{msg: c.scrub.Replace(err.Error()), err: err}
}

// headers puts the entry's headers on each request to the server's
// origin, and the protocol version the session negotiated where the sdk
// (whose client session would tell it) has none; it caps what each answer
// may make the sdk read, and notes an answer refusing authorization.
type headers struct {
	base   http.RoundTripper
	set    map[string]string
	origin *url.URL
	max    int64 // Config.MaxMessage
	c      *conn
}

func (h *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if sameOrigin(h.origin, req.URL) {
		// Only there: CheckRedirect refuses a redirect elsewhere, and
		// this holds even for a client that follows one.
		for k, v := range h.set {
			req.Header.Set(k, v)
		}
	}
	if v, _ := h.c.version.Load().(string); v != "" && req.Header.Get("Mcp-Protocol-Version") == "" {
		req.Header.Set("Mcp-Protocol-Version", v)
	}
	resp, err := h.base.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		// Nothing answers there now: whatever sessions it held are gone
		// with it. The session ends (the death's one notice), and the
		// next use starts a new one, once something answers again.
		h.c.end(fmt.Errorf("cannot reach the MCP server: %w", h.c.scrubbed(err)))
	}
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		h.c.end(fmt.Errorf("the MCP server at %s answered %s: it wants authorization, and bingo does not do OAuth; give it a token in a header of its entry (\"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"})",
			h.c.url, resp.Status))
	}
	if err == nil {
		// The sdk reads a JSON answer (and an error's body) whole; an
		// event stream (the media type read as the sdk reads it) it reads
		// event by event, each under MaxEventSize.
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
			resp.Body = &capped{rc: resp.Body, max: h.max, left: h.max, c: h.c}
		}
	}
	return resp, err
}

// capped is an answer's body read under the cap: past it, the read fails
// and the session ends saying why, so the sdk never holds more of it.
type capped struct {
	rc        io.ReadCloser
	max, left int64
	c         *conn
	err       error // past the cap: every later read fails so
}

func (b *capped) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells a body over it
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.err = fmt.Errorf("the MCP server at %s sent an answer of more than %d MiB, the cap on one message: refused", b.c.url, b.max>>20)
		b.c.end(b.err)
		return 0, b.err
	}
	return n, err
}

func (b *capped) Close() error { return b.rc.Close() }

// conn is one session: what the translator writes goes to the server,
// what the server sends comes back as lines.
type conn struct {
	url    string            // as shown (Config.Shown)
	scrub  *strings.Replacer // the URL as expanded, in an error's text, to url
	log    io.Writer
	mc     mcp.Connection
	ctx    context.Context // the session's: cancelled when it ends
	cancel context.CancelFunc
	pr     *io.PipeReader
	pw     *io.PipeWriter
	out    chan []byte // lines written, in order, for writeLoop
	rmu    sync.Mutex  // one line at a time to Read

	wmu     sync.Mutex
	partial []byte // a line written in parts

	version atomic.Value // string: the protocol version negotiated

	once sync.Once
	err  error // why the session ended; nil for a clean end
	done chan struct{}
}

// Read returns the server's messages, one a line.
func (c *conn) Read(p []byte) (int, error) { return c.pr.Read(p) }

// Write takes the translator's messages, one a line, and sends each in
// order on its own: a request answered by a stream does not hold up the
// next message.
func (c *conn) Write(p []byte) (int, error) {
	select {
	case <-c.done:
		return 0, c.ended()
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(nil), c.partial[:i]...)
		c.partial = c.partial[i+1:]
		select {
		case c.out <- line:
		case <-c.done:
			return 0, c.ended()
		}
	}
	return len(p), nil
}

// writeLoop sends each message. One that cannot be sent, if it is a
// request, is answered here with the reason, so the caller does not wait
// for its deadline.
func (c *conn) writeLoop() {
	for {
		var line []byte
		select {
		case line = <-c.out:
		case <-c.done:
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			fmt.Fprintf(c.log, "mcphttp: not sent, not a JSON-RPC message (%v)\n", err)
			continue
		}
		if err := c.mc.Write(c.ctx, msg); err != nil {
			select {
			case <-c.done:
				return // ended meanwhile: that is the reason, said once
			default:
			}
			err = c.scrubbed(err)
			fmt.Fprintf(c.log, "mcphttp: %v\n", err)
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.answer(req.ID, err)
			}
		}
	}
}

// answer fails the request id with err.
func (c *conn) answer(id jsonrpc.ID, err error) {
	resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the MCP server could not be reached: " + err.Error()}}
	data, e := jsonrpc.EncodeMessage(resp)
	if e != nil {
		return
	}
	_ = c.line(data)
}

// line hands one message to Read as one line: written whole, so that an
// answer made here never lands inside a message of the server's.
func (c *conn) line(data []byte) error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	_, err := c.pw.Write(append(data, '\n'))
	return err
}

// readLoop hands on what the server sends until the session ends.
func (c *conn) readLoop() {
	for {
		msg, err := c.mc.Read(c.ctx)
		if err != nil {
			if c.ctx.Err() == nil {
				c.end(fmt.Errorf("the MCP session with %s ended: %w", c.url, c.scrubbed(err)))
			}
			return
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.Result != nil {
			var v struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(r.Result, &v) == nil && v.ProtocolVersion != "" {
				c.version.Store(v.ProtocolVersion)
			}
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			fmt.Fprintf(c.log, "mcphttp: %v\n", err)
			continue
		}
		if err := c.line(data); err != nil {
			return
		}
	}
}

// end ends the session for err (nil: a clean end), once: the connection
// is closed (the server is told, unless it already forgot the session),
// the translator reads the end, and Wait returns err.
func (c *conn) end(err error) {
	c.once.Do(func() {
		c.err = err
		switch {
		case errors.Is(err, transport.ErrKilled):
			// Killed (wedged, or the host is done with it): the log
			// says where the session went, as a process's exit would.
			fmt.Fprintf(c.log, "mcphttp: dropping the MCP session with %s\n", c.url)
		case err != nil:
			fmt.Fprintf(c.log, "mcphttp: %v\n", err)
		}
		close(c.done)
		go func() {
			_ = c.mc.Close()
			c.cancel()
		}()
		if err == nil {
			err = io.EOF
		}
		c.pw.CloseWithError(err)
	})
}

func (c *conn) ended() error {
	if c.err != nil {
		return c.err
	}
	return io.ErrClosedPipe
}

// Close ends the session cleanly: there is no stdin to close, and a
// session the translator is done with is over.
func (c *conn) Close() error {
	c.end(nil)
	return nil
}

// Kill drops the session.
func (c *conn) Kill() error {
	c.end(transport.ErrKilled)
	return nil
}

// Wait returns once the session has ended, with why.
func (c *conn) Wait() error {
	<-c.done
	if errors.Is(c.err, transport.ErrKilled) {
		return transport.ErrKilled
	}
	return c.err
}
