package mcphttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
)

// followable reports whether a redirect from the configured URL to to
// may be followed with the entry's headers: to the same origin, or from
// http to https on the same host (the same port, or the default ports),
// the one origin the person's headers go to beside their own (an upgrade
// hides them better than the plain request that was redirected). Go's
// client drops Authorization on a redirect to another host, but the round
// tripper would put every header back: such a redirect is refused rather
// than followed bare, since a server that moved is for the person to
// configure anew.
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
	if followable(h.origin, req.URL) {
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
	// An event stream is told by its media type, as the sdk reads it, and
	// only in a success: an error's body the sdk (and forgot) reads whole,
	// whatever its media type.
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := mt == "text/event-stream" && resp.StatusCode >= 200 && resp.StatusCode < 300
	if !sse {
		// Read whole, so under the cap; an event stream the sdk reads
		// event by event, each under MaxEventSize.
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
