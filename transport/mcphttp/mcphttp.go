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
// however much the server sends. A 401 or 403 goes to Config.OAuth, which
// authorizes; without one, it ends the session with one error naming
// where to authorize. A request that cannot reach the server ends the
// session, as does a server that forgot it (it restarted: 404, or 400 as
// the reference servers answer): the call fails at once, and the next use
// starts a new session. A request the server refuses otherwise is
// answered with a JSON-RPC error: the server's own, whole, when it
// answered with one.
//
// An MCP client of the go-sdk connects to the session itself (Client),
// as mcpbridge does: the sdk's client session then meets the sdk's
// transport as the sdk intends, and nothing it does is lost (the stream a
// session before protocol 2026-07-28 opens with a GET, the headers of
// each request, errors whole). The Conn's lines are for any other use.
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

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

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
	// OAuth, if set, answers a 401 or 403 (package internal/oauth): the
	// sdk's transport asks it to authorize, and retries. Unset, either
	// ends the session with one error naming where to authorize.
	OAuth auth.OAuthHandler
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
	pairs := []string{r.cfg.URL, r.cfg.Shown, origin.String(), r.cfg.Shown, origin.Redacted(), r.cfg.Shown}
	if shown, err := url.Parse(r.cfg.Shown); err == nil {
		// What the sdk derives from the URL (its resource metadata's
		// well-known URL) holds its path and query, not the URL whole.
		for _, p := range [][2]string{{origin.EscapedPath(), shown.EscapedPath()}, {origin.Path, shown.Path}, {origin.RawQuery, shown.RawQuery}} {
			if len(p[0]) > 1 && p[0] != p[1] {
				pairs = append(pairs, p[0], p[1])
			}
		}
	}
	c.scrub = strings.NewReplacer(pairs...)
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	base := r.cfg.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := *r.cfg.Client
	client.Transport = &headers{base: base, set: r.cfg.Headers, origin: origin, max: int64(r.cfg.MaxMessage), c: c, oauth: r.cfg.OAuth != nil}
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
	c.st = &mcp.StreamableClientTransport{Endpoint: r.cfg.URL, HTTPClient: &client, MaxEventSize: r.cfg.MaxMessage}
	if r.cfg.OAuth != nil {
		c.st.OAuthHandler = r.cfg.OAuth
	}
	c.pr, c.pw = io.Pipe()
	return c, nil
}

// Tap sees every message of a session as it crosses the wire: toServer,
// each message posted, once the server has answered it, before
// the sdk reads the answer; otherwise, before the sdk does, each message the
// server sends, whether as a JSON answer or as one event of a stream
// (either answering a request, or on the session's own stream, the GET).
// It runs on the goroutine making the request or reading the answer, so
// what the server sends reaches it in order, and before the sdk hands any
// of it on. The HTTP headers are never part of it.
type Tap func(toServer bool, msg []byte)

// Client is the session for an MCP client of the go-sdk (mcp.Client's
// Connect): its session meets the sdk's Streamable HTTP transport itself,
// as the sdk intends, so that nothing the transport does is lost in
// translation: the protocol version and the Mcp-Method, Mcp-Name and
// Mcp-Param-* headers of each request (the tool's own, from the call's
// context), the stream a session of a protocol before 2026-07-28 opens
// with a GET for what the server sends outside any request, and a
// JSON-RPC error the server answers with HTTP 400 (a version it does not
// support), whole. The Conn's own Read and Write are not used then: Read
// returns only the session's end. tap, if not nil, sees every message
// (Tap).
func (c *conn) Client(tap Tap) mcp.Transport { return clientTransport{c: c, tap: tap} }

// Session is the Conn of a remote server's instance, as an MCP client of
// the go-sdk uses it.
type Session interface {
	transport.Conn
	Client(tap Tap) mcp.Transport
	Ended(err error)
	Done() <-chan struct{}
	// Scrub is text (an error of the sdk's) with the URL as expanded, or
	// its path or query, as shown (Config.Shown).
	Scrub(text string) string
}

var _ Session = (*conn)(nil)

// Ended ends an MCP client's session (Client) for err, the reason its
// client session ended: there is no process to see exit.
func (c *conn) Ended(err error) {
	if err == nil {
		c.end(nil)
		return
	}
	c.end(fmt.Errorf("the MCP session with %s ended: %w", c.url, c.scrubbed(err)))
}

// Scrub is text with the URL as expanded, or its path or query, as shown.
func (c *conn) Scrub(text string) string { return c.scrub.Replace(text) }

// Done is closed once the session has ended: an error the sdk's client
// meets after it is the end's, which Wait gives.
func (c *conn) Done() <-chan struct{} { return c.done }

type clientTransport struct {
	c   *conn
	tap Tap
}

func (t clientTransport) Connect(context.Context) (mcp.Connection, error) {
	c := t.c
	if !c.claim(false) {
		return nil, errors.New("mcphttp: the session carries lines already")
	}
	c.tap = t.tap
	mc, err := c.st.Connect(c.ctx)
	if err != nil {
		return nil, c.scrubbed(err)
	}
	if !c.connected(mc) {
		return nil, c.ended()
	}
	return mc, nil
}

// connected records the sdk's connection, for end to close; false if the
// session ended meanwhile (the connection is closed then).
func (c *conn) connected(mc mcp.Connection) bool {
	c.mcMu.Lock()
	defer c.mcMu.Unlock()
	select {
	case <-c.done:
		_ = mc.Close()
		return false
	default:
	}
	c.mc = mc
	return true
}

// claim settles, once, whether the session carries lines (Read and
// Write) or is an MCP client's (Client), and reports whether it is the
// one asked for.
func (c *conn) claim(lines bool) bool {
	c.mode.Do(func() { c.lines = lines })
	return c.lines == lines
}

// startLines connects the session for Read and Write, on first use.
func (c *conn) startLines() error {
	if !c.claim(true) {
		return errors.New("mcphttp: the session is an MCP client's")
	}
	c.linesOnce.Do(func() {
		mc, err := c.st.Connect(c.ctx)
		if err != nil {
			c.end(c.scrubbed(err))
			return
		}
		if !c.connected(mc) {
			return
		}
		go c.readLoop()
		go c.writeLoop()
	})
	return nil
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
	oauth  bool // Config.OAuth answers a 401 or 403
}

// authorization reports whether the entry sends its own Authorization
// header.
func (h *headers) authorization() bool {
	for k := range h.set {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// authorizeAt is where a 401 or 403 says to authorize: the resource
// metadata its WWW-Authenticate names (RFC 9728), as " (see URL)"; "" if
// it names none.
func authorizeAt(resp *http.Response) string {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if u := c.Params["resource_metadata"]; u != "" {
			return " (see " + render.URL(u) + ")"
		}
	}
	return ""
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
	if err == nil && !h.oauth && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		if h.authorization() {
			h.c.end(fmt.Errorf("the MCP server at %s answered %s: it refused the Authorization header of its entry%s; check the token it sends",
				h.c.url, resp.Status, authorizeAt(resp)))
		} else {
			h.c.end(fmt.Errorf("the MCP server at %s answered %s: it wants authorization%s, and this session has no way to ask for it; give it a token in a header of its entry (\"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"})",
				h.c.url, resp.Status, authorizeAt(resp)))
		}
	}
	if err != nil {
		return resp, err
	}
	// An event stream is told by its media type, as the sdk reads it.
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := mt == "text/event-stream"
	if !sse {
		// The sdk reads a JSON answer (and an error's body) whole; an
		// event stream it reads event by event, each under MaxEventSize.
		resp.Body = &capped{rc: resp.Body, max: h.max, left: h.max, c: h.c}
	}
	if req.Header.Get("Mcp-Session-Id") != "" && forgot(resp) {
		// The server restarted and forgot the session: every later
		// request would be refused the same. The session ends, and the
		// next use starts a new one.
		h.c.end(fmt.Errorf("the MCP server at %s no longer knows the session (%s): it has restarted, or ended it", h.c.url, resp.Status))
	}
	if tap := h.c.tap; tap != nil {
		// Once answered, the server has the message posted; what it
		// answers is read only after this returns.
		if req.Method == http.MethodPost && req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				data, _ := io.ReadAll(io.LimitReader(body, h.max))
				tap(true, data)
			}
		}
	}
	if sse || h.c.tap != nil {
		resp.Body = &tapped{rc: resp.Body, sse: sse, tap: h.c.tap, max: int(h.max), c: h.c}
	}
	return resp, nil
}

// forgot reports whether resp, the answer to a request carrying a
// session's id, says the server does not know the session: 404, as the
// spec has it, or 400 with a JSON-RPC error of no id, as the reference
// servers (server-everything) answer. Any other 400 (a version refused,
// a header that does not match) is the request's own error. A 400's body
// is read (under the cap) and put back for the sdk.
func forgot(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if err != nil {
			return false
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		return json.Unmarshal(data, &m) == nil && m.Error != nil && (m.ID == nil || string(m.ID) == "null")
	}
	return false
}

// tapped is an answer's body as the sdk reads it: an event stream's
// events each under the cap, and each message handed to the session's
// Tap, if it has one, once the sdk has read the last of its bytes: a JSON
// answer at its end, an event stream's message at the blank line that
// ends its event (the data of its data lines, as the sdk joins them; an
// event with no data, such as a stream's priming event, is none).
type tapped struct {
	rc      io.ReadCloser
	sse     bool
	tap     Tap // nil: the cap alone
	max     int // Config.MaxMessage
	c       *conn
	err     error  // an event past the cap: every later read fails so
	event   int    // event stream: the bytes of the event so far
	buf     []byte // JSON: the body so far; event stream: the line so far
	data    []byte // event stream: the event's data so far
	hasData bool
}

func (b *tapped) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if b.sse {
		if !b.scan(p[:n]) {
			// Ended here, before the sdk reads on: the session's end,
			// not the sdk's error, is what the call in flight meets.
			b.err = fmt.Errorf("the MCP server at %s sent an event of more than %d MiB, the cap on one message: refused", b.c.url, b.max>>20)
			b.c.end(b.err)
			return 0, b.err
		}
	} else if len(b.buf)+n <= b.max {
		b.buf = append(b.buf, p[:n]...)
	}
	if err == io.EOF && !b.sse && b.tap != nil && len(bytes.TrimSpace(b.buf)) > 0 {
		b.tap(false, b.buf)
		b.buf = nil
	}
	return n, err
}

// scan takes an event stream's bytes line by line (ended by LF or CRLF),
// and reports whether the event they are part of is still under the cap.
func (b *tapped) scan(p []byte) bool {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.event += len(p)
			if b.tap != nil {
				b.buf = append(b.buf, p...)
			}
			return b.event <= b.max
		}
		b.event += i + 1
		if b.event > b.max {
			return false
		}
		line := append(b.buf, p[:i]...)
		b.buf = b.buf[:0]
		p = p[i+1:]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			if b.hasData && b.tap != nil {
				b.tap(false, b.data)
			}
			b.data, b.hasData, b.event = nil, false, 0
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if b.hasData {
				b.data = append(b.data, '\n')
			}
			if b.tap != nil {
				b.data = append(b.data, v...)
			}
			b.hasData = true
		}
	}
	return true
}

func (b *tapped) Close() error { return b.rc.Close() }

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
	url   string            // as shown (Config.Shown)
	scrub *strings.Replacer // the URL as expanded, in an error's text, to url
	log   io.Writer
	st    *mcp.StreamableClientTransport
	mcMu  sync.Mutex
	mc    mcp.Connection // once connected; under mcMu, until readLoop and writeLoop start

	mode      sync.Once // settles lines
	lines     bool      // the session carries lines (Read, Write), not an MCP client's (Client)
	linesOnce sync.Once
	tap       Tap             // set before the session connects (Client)
	ctx       context.Context // the session's: cancelled when it ends
	cancel    context.CancelFunc
	pr        *io.PipeReader
	pw        *io.PipeWriter
	out       chan []byte // lines written, in order, for writeLoop
	rmu       sync.Mutex  // one line at a time to Read

	wmu     sync.Mutex
	partial []byte // a line written in parts

	version atomic.Value // string: the protocol version negotiated

	once sync.Once
	err  error // why the session ended; nil for a clean end
	done chan struct{}
}

// Read returns the server's messages, one a line; for a session that is
// an MCP client's (Client), only its end.
func (c *conn) Read(p []byte) (int, error) {
	if c.claim(true) {
		if err := c.startLines(); err != nil {
			return 0, err
		}
	}
	return c.pr.Read(p)
}

// Write takes the translator's messages, one a line, and sends each in
// order on its own: a request answered by a stream does not hold up the
// next message.
func (c *conn) Write(p []byte) (int, error) {
	if err := c.startLines(); err != nil {
		return 0, err
	}
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
// A JSON-RPC error the server answered with (an HTTP 400 carrying one,
// such as -32022 for a protocol version it does not support, with the
// versions it does) crosses whole, its code, message and data, so that
// the client can act on it.
func (c *conn) answer(id jsonrpc.ID, err error) {
	resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the MCP server could not be reached: " + err.Error()}}
	if je := (*jsonrpc.Error)(nil); errors.As(err, &je) {
		resp.Error = je
	}
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
	// The newline is written on its own: appending it would copy a
	// message of up to the cap once more.
	if _, err := c.pw.Write(data); err != nil {
		return err
	}
	_, err := c.pw.Write(newline)
	return err
}

var newline = []byte{'\n'}

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
		c.mcMu.Lock()
		close(c.done)
		mc := c.mc
		c.mcMu.Unlock()
		go func() {
			if mc != nil {
				_ = mc.Close()
			}
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
