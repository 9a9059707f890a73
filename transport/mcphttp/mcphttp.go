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
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
