// Package oauth authorizes bingo with a remote MCP server that asks for
// it, with the person in charge: an [auth.OAuthHandler] for the go-sdk's
// Streamable HTTP transport (transport/mcphttp), built on the sdk's
// auth.AuthorizationCodeHandler, which discovers the authorization
// server, registers bingo as a client, runs the authorization code flow
// with PKCE and the resource parameter, checks the issuer, steps up for
// more scope and refreshes tokens. This package supplies what the sdk
// leaves to the application:
//
//   - The browser step: the authorization URL opens with the program in
//     $BROWSER, else xdg-open (open on macOS), and is printed on stderr;
//     the code comes back to a loopback redirect URI
//     (http://127.0.0.1:PORT/callback) that listens only while it waits.
//   - Who may be asked: bingo mcp login asks at once. Later, when a
//     server asks again (a refresh token expired or refused, a step-up
//     for more scope), bingo says why and opens the browser at a terminal;
//     without one only where $BROWSER is set; otherwise the request fails
//     with one error naming the authorization server and bingo mcp login.
//   - Registration: the entry's client ID metadata document URL, if the
//     authorization server takes one; then a pre-registered client (the
//     entry's clientId and clientSecret); else dynamic registration.
//   - The token store (Store): per server name, URL and issuer, under
//     ~/.bingo, 0600 in a 0700 directory, written again on each refresh.
//     A grant is used only for the URL it was given for, and the same
//     name at another URL has its own.
//
// For unattended use, an entry's "grant": "client_credentials" has bingo
// authorize as its client alone, with its ID and secret
// (ClientCredentials: the sdk's extauth.ClientCredentialsHandler, an
// extension in go-sdk v1.8.0); nothing is stored then, and no one asked.
package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Options configure one server's Handler.
type Options struct {
	Server string // the plugin's name: the store's key, and what messages name
	URL    string // the server's URL, as expanded: a grant is kept for it alone
	// Shown is the URL as messages show it: as the entry has it, its
	// ${VAR}s unexpanded; "" is URL. Either way through render.URL.
	Shown string
	// The entry's registration, if any (its ${VAR}s expanded).
	ClientID, ClientSecret, ClientMetadataURL string
	Grant                                     string // manifest.GrantClientCredentials, or the authorization code flow
	Store                                     Store
	// HTTP makes the requests to the authorization server; nil is
	// http.DefaultClient.
	HTTP *http.Client
	// Login is bingo mcp login: the browser opens at once.
	Login bool
	// Terminal: a person is at a terminal to see the browser open, and
	// why. Without one (and not Login), the browser opens only where
	// $BROWSER is set.
	Terminal bool
	// Say tells the person one line (why the browser opens); Stderr gets
	// the authorization URL. Either may be nil.
	Say    func(string)
	Stderr io.Writer
	// Getenv reads $BROWSER; nil is os.Getenv.
	Getenv func(string) string
	// Open sends the person's browser to a URL; nil runs $BROWSER, else
	// the system's opener (xdg-open, open).
	Open func(browser, url string) error
	// Port is the loopback redirect's port (a client registered with
	// one); 0 is any free port.
	Port int
	// Wait bounds the wait for the browser's redirect; 0 is 5 minutes.
	Wait time.Duration
}

// Handler is the server's auth.OAuthHandler.
type Handler struct {
	o Options

	// authorizing is held by the one authorization that runs at a time:
	// the sdk calls Authorize from each request that got a 401, and two
	// at once would open two browser tabs and listen twice on a fixed
	// redirect port.
	authorizing sync.Mutex
	mu          sync.Mutex
	stored      oauth2.TokenSource             // the stored grant's, until an authorization here
	inner       *auth.AuthorizationCodeHandler // built at the first authorization
	port        int                            // the loopback redirect's, fixed at the first
	issuer      map[string]string              // token endpoint → issuer, from the metadata read
	got         string                         // the issuer of the grant last stored here
	scopes      []string                       // the scopes the stored grant asked for
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns the server's handler, with the grant stored for it, if
// any: a Login starts from none.
func New(o Options) (*Handler, error) {
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Wait <= 0 {
		o.Wait = 5 * time.Minute
	}
	if o.Open == nil {
		stderr := o.Stderr
		o.Open = func(browser, u string) error { return open(browser, u, stderr) }
	}
	if o.Shown == "" {
		o.Shown = o.URL
	}
	o.Shown = render.URL(o.Shown)
	h := &Handler{o: o, issuer: map[string]string{}, port: o.Port}
	client := *o.HTTP
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = metadataTap{base: publicOnly(base), h: h}
	h.o.HTTP = &client
	if o.Login {
		return h, nil
	}
	r, err := o.Store.load(o.Server, o.URL)
	if err != nil {
		return nil, err
	}
	if g := r.Issuers[r.Current]; g != nil && g.Token != nil {
		h.stored = h.saving(r.Current, g, g.config().TokenSource(h.refreshContext(), g.Token))
		h.scopes = g.Scopes
	}
	return h, nil
}

// refreshContext is what the token sources refresh with: it outlives any
// one request, and carries the client.
func (h *Handler) refreshContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, h.o.HTTP)
}

// TokenSource is the token of the latest authorization, or of the stored
// grant; nil when there is neither (a request goes without, and a server
// that wants one answers 401).
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	inner, stored := h.inner, h.stored
	h.mu.Unlock()
	if inner != nil {
		if ts, err := inner.TokenSource(ctx); ts != nil || err != nil {
			return ts, err
		}
	}
	return stored, nil
}

// whyKey carries why an authorization runs, to the browser step.
type whyKey struct{}

// listenerKey carries the loopback listener, to the browser step.
type listenerKey struct{}

// Authorize runs the sdk's authorization code flow for a 401 or 403 (the
// sdk's contract), the browser step as Options say.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	why := "it asks for authorization"
	switch {
	case resp.StatusCode == http.StatusForbidden:
		why = "it asks for more scope than was granted"
	case req.Header.Get("Authorization") != "":
		// A token went with the request: it expired, or its refresh
		// token was refused.
		why = "its authorization has expired or was refused"
	}
	h.authorizing.Lock()
	defer h.authorizing.Unlock()
	if h.authorizedSince(ctx, req) {
		// Another request's authorization ran while this one waited:
		// the sdk sends this one again with its token.
		resp.Body.Close()
		return nil
	}
	ln, err := h.listen()
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("authorizing with %s: a loopback port for the redirect: %v", h.o.Server, err)
	}
	defer ln.Close()
	inner, err := h.handler()
	if err != nil {
		resp.Body.Close()
		return err
	}
	ctx = context.WithValue(context.WithValue(ctx, whyKey{}, why), listenerKey{}, ln)
	status := resp.Status
	if err := inner.Authorize(ctx, req, resp); err != nil {
		if errors.Is(err, ErrNoOneToAsk) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("the MCP server at %s answered %s and its authorization failed: %w", h.o.Shown, status, err)
	}
	return nil
}

// authorizedSince reports whether a token other than the one req went
// with (if any) is at hand.
func (h *Handler) authorizedSince(ctx context.Context, req *http.Request) bool {
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return false
	}
	tok, err := ts.Token()
	if err != nil || !tok.Valid() {
		return false
	}
	// As the sdk sends it (mcp/streamable.go), whatever the token type.
	return req.Header.Get("Authorization") != "Bearer "+tok.AccessToken
}

// listen opens the loopback redirect's port: any free one at first, the
// same one after, since the redirect URI is fixed once the sdk's handler
// exists (and a dynamic registration holds it).
func (h *Handler) listen() (net.Listener, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(h.port))
	if err != nil {
		return nil, err
	}
	h.port = ln.Addr().(*net.TCPAddr).Port
	return ln, nil
}

// handler is the sdk's handler, built once the redirect's port is known.
func (h *Handler) handler() (*auth.AuthorizationCodeHandler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inner != nil {
		return h.inner, nil
	}
	redirect := "http://127.0.0.1:" + strconv.Itoa(h.port) + "/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.browse,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "bingo", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			// A native app keeps no secret (RFC 8252): a public client,
			// PKCE its proof. Unsaid, an authorization server that
			// answers without a method leaves the sdk sending a secret
			// by HTTP Basic, which one that reads the client from the
			// form (the TypeScript SDK's) refuses.
			TokenEndpointAuthMethod: "none",
		}},
		RequestRefreshToken: true,
		// A step-up asks for what was granted before too (SEP-2350):
		// the sdk's handler remembers it only within one process, so
		// the stored grant's scopes are added here.
		ScopeFilter: func(discovered []string) []string {
			out := slices.Clone(discovered)
			for _, s := range h.scopes {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		},
		Client:             h.o.HTTP,
		InitialTokenSource: h.stored,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			issuer := h.issuerOf(c.Endpoint.TokenURL)
			g := &grant{ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL,
				AuthStyle: c.Endpoint.AuthStyle, RedirectURL: c.RedirectURL, Scopes: c.Scopes, Token: tok}
			if err := h.save(issuer, g); err != nil {
				return nil, fmt.Errorf("storing the token for %s: %v", h.o.Server, err)
			}
			h.mu.Lock()
			h.got = issuer
			h.mu.Unlock()
			return h.saving(issuer, g, c.TokenSource(ctx, tok)), nil
		},
	}
	if h.o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.o.ClientMetadataURL}
	}
	if h.o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.o.ClientID}
		if h.o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.o.ClientSecret}
		}
	}
	inner, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("authorizing with %s: %v", h.o.Server, err)
	}
	h.inner = inner
	return inner, nil
}

// Authorized is the issuer of the grant an authorization here stored;
// "" if none ran.
func (h *Handler) Authorized() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got
}

// File is where the store keeps the server's grants.
func (h *Handler) File() string { return h.o.Store.path(h.o.Server) }

// save stores g as the grant of issuer, the one in use.
func (h *Handler) save(issuer string, g *grant) error {
	return h.o.Store.update(h.o.Server, h.o.URL, func(r *record) bool {
		r.Current = issuer
		r.Issuers[issuer] = g
		return true
	})
}

// saveRefreshed stores g, refreshed, as the grant of issuer, if the store
// still has one: a refresh after bingo mcp logout (in another run) does
// not bring the forgotten grant back.
func (h *Handler) saveRefreshed(issuer string, g *grant) error {
	return h.o.Store.update(h.o.Server, h.o.URL, func(r *record) bool {
		if r.Issuers[issuer] == nil {
			return false
		}
		r.Issuers[issuer] = g
		return true
	})
}

// saving is ts, each new token it gives (a refresh) stored as g's.
func (h *Handler) saving(issuer string, g *grant, ts oauth2.TokenSource) oauth2.TokenSource {
	return &savingSource{h: h, issuer: issuer, g: g, ts: ts, last: g.Token.AccessToken}
}

type savingSource struct {
	h      *Handler
	issuer string
	ts     oauth2.TokenSource
	mu     sync.Mutex
	g      *grant
	last   string
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.ts.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.AccessToken != s.last {
		s.last = tok.AccessToken
		g := *s.g
		g.Token = tok
		if err := s.h.saveRefreshed(s.issuer, &g); err != nil && s.h.o.Say != nil {
			s.h.o.Say(fmt.Sprintf("a refreshed token for %s was not stored: %v", s.h.o.Server, err))
		}
	}
	return tok, nil
}

// issuerOf is the issuer whose metadata named tokenURL; its origin if
// none did (a server of 2025-03-26 without metadata).
func (h *Handler) issuerOf(tokenURL string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if iss, ok := h.issuer[tokenURL]; ok {
		return iss
	}
	if u, err := url.Parse(tokenURL); err == nil {
		return u.Scheme + "://" + u.Host
	}
	return tokenURL
}

// metadataTap notes the issuer of each authorization server metadata
// document the sdk reads (RFC 8414, OpenID discovery), so that a grant
// is stored under its issuer.
type metadataTap struct {
	base http.RoundTripper
	h    *Handler
}

func (t metadataTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(req.URL.Path, "/.well-known/") {
		return resp, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRecord))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if err != nil {
		return resp, nil
	}
	var m struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if json.Unmarshal(data, &m) == nil && m.Issuer != "" && m.TokenEndpoint != "" {
		t.h.mu.Lock()
		t.h.issuer[m.TokenEndpoint] = m.Issuer
		t.h.mu.Unlock()
	}
	return resp, nil
}

// ErrNoOneToAsk is the error of an authorization no one can be asked for:
// no terminal, no $BROWSER, not bingo mcp login.
var ErrNoOneToAsk = errors.New("no one to ask")

// browse is the sdk's AuthorizationCodeFetcher: it sends the person to
// args.URL and waits for the redirect on the loopback listener.
func (h *Handler) browse(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	where, state := args.URL, ""
	if u, err := url.Parse(args.URL); err == nil {
		where, state = u.Scheme+"://"+u.Host, u.Query().Get("state")
	}
	why, _ := ctx.Value(whyKey{}).(string)
	browser := h.o.Getenv("BROWSER")
	if !h.o.Login && !h.o.Terminal && browser == "" {
		return nil, fmt.Errorf("the MCP server %s wants authorization at %s (%s), and no one is here to give it: run `bingo mcp login %s`: %w",
			h.o.Server, where, why, h.o.Server, ErrNoOneToAsk)
	}
	ln, _ := ctx.Value(listenerKey{}).(net.Listener)
	if ln == nil {
		return nil, errors.New("oauth: no loopback listener")
	}
	if !h.o.Login && h.o.Say != nil {
		h.o.Say(fmt.Sprintf("%s: %s; opening your browser to authorize at %s", h.o.Server, why, where))
	}
	if h.o.Stderr != nil {
		fmt.Fprintf(h.o.Stderr, "bingo: to authorize %s, open this URL in your browser:\n  %s\n", h.o.Server, args.URL)
	}
	got := make(chan *auth.AuthorizationResult, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("state") != state {
			// Not the redirect of the authorization sent: anything on
			// this machine can reach the port, and must not end the
			// wait (nor fail the login) for the browser's.
			http.Error(w, "bingo: not the authorization bingo asked for", http.StatusBadRequest)
			return
		}
		res := &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		msg := "bingo has the authorization: you may close this page."
		if e := q.Get("error"); e != "" {
			msg = "The authorization server refused: " + e + " " + q.Get("error_description")
			res = &auth.AuthorizationResult{State: q.Get("state")}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>bingo</title><p>%s</p>\n", html.EscapeString(msg))
		select {
		case got <- res:
		default:
		}
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	if err := h.o.Open(browser, args.URL); err != nil && h.o.Stderr != nil {
		fmt.Fprintf(h.o.Stderr, "bingo: could not open a browser (%v): open the URL above yourself\n", err)
	}
	t := time.NewTimer(h.o.Wait)
	defer t.Stop()
	select {
	case res := <-got:
		if res.Code == "" {
			return nil, fmt.Errorf("the authorization server at %s did not authorize bingo for %s", where, h.o.Server)
		}
		return res, nil
	case <-t.C:
		return nil, fmt.Errorf("no authorization for %s came back from %s within %v", h.o.Server, where, h.o.Wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open opens u with browser ($BROWSER: a command, its words split on
// spaces, the first of a colon-separated list), else the system's opener.
// It does not wait for the browser, only reaps it, saying on stderr (if
// not nil) when it failed.
func open(browser, u string, stderr io.Writer) error {
	var cmd *exec.Cmd
	switch {
	case browser != "":
		words := strings.Fields(strings.Split(browser, ":")[0])
		if len(words) == 0 {
			return errors.New("$BROWSER is blank")
		}
		cmd = exec.Command(words[0], append(words[1:], u)...)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		if err := cmd.Wait(); err != nil && stderr != nil {
			fmt.Fprintf(stderr, "bingo: the browser (%s) failed: %v; open the URL above yourself\n", cmd.Path, err)
		}
	}()
	return nil
}

// ClientCredentials is the handler of a server whose entry authorizes by
// the client credentials grant (manifest.GrantClientCredentials).
func ClientCredentials(o Options) (auth.OAuthHandler, error) {
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}},
		HTTPClient:  o.HTTP,
	})
	if err != nil {
		return nil, fmt.Errorf("authorizing %s by its client's credentials: %v", o.Server, err)
	}
	return &serial{h: h}, nil
}

// serial runs the sdk's client credentials handler one call at a time:
// it sets its token source in Authorize without a lock.
type serial struct {
	mu sync.Mutex
	h  auth.OAuthHandler
}

func (s *serial) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.TokenSource(ctx)
}

func (s *serial) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Authorize(ctx, req, resp)
}

// Manages reports whether e's own headers authorize it (an
// Authorization header, a token the person gives): then bingo does no
// OAuth for it, since the header would replace the token OAuth got.
func Manages(e manifest.Entry) bool {
	for k := range e.Headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// ForEntry is the Options of the remote server name, whose entry e is
// resolved (its ${VAR}s expanded), its grants stored under home.
func ForEntry(name string, e manifest.Entry, home string) Options {
	o := Options{Server: name, URL: e.URL, Store: Store{Dir: DefaultDir(home)}}
	if e.OAuth != nil {
		o.ClientID, o.ClientSecret, o.ClientMetadataURL, o.Port = e.OAuth.ClientID, e.OAuth.ClientSecret, e.OAuth.ClientMetadataURL, e.OAuth.CallbackPort
		o.Grant = e.OAuth.Grant
	}
	return o
}

// Handle is the handler for o: ClientCredentials for an entry that says
// so, else New's.
func Handle(o Options) (auth.OAuthHandler, error) {
	if o.Grant == manifest.GrantClientCredentials {
		return ClientCredentials(o)
	}
	return New(o)
}

// Store is where the handler keeps its grants.
func (h *Handler) Store() Store { return h.o.Store }
