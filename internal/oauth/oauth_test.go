package oauth_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/internal/oauth"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// protected is an MCP server behind bearer tokens, with its own
// authorization server: dynamic registration, an authorize endpoint that
// approves at once (redirecting with the code), and a token endpoint
// that issues tokens living life and refresh tokens, until refuse is set.
type protected struct {
	t        *testing.T
	mcp, as  *httptest.Server
	life     time.Duration
	mu       sync.Mutex
	tokens   map[string]time.Time // access token → expiry
	refresh  map[string]bool
	codes    map[string]string // code → resource
	grants   []string          // the grant types the token endpoint saw
	refuse   bool              // refresh tokens are refused (invalid_grant)
	resource []string          // the resource parameter of each authorization
}

func newProtected(t *testing.T, life time.Duration) *protected {
	p := &protected{t: t, life: life, tokens: map[string]time.Time{}, refresh: map[string]bool{}, codes: map[string]string{}}
	as := http.NewServeMux()
	p.as = httptest.NewServer(as)
	t.Cleanup(p.as.Close)
	as.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": p.as.URL, "authorization_endpoint": p.as.URL + "/authorize", "token_endpoint": p.as.URL + "/token",
			"registration_endpoint": p.as.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	as.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		m["client_id"] = "c-" + rand.Text()
		m["token_endpoint_auth_method"] = "none"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(m)
	})
	as.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		code := rand.Text()
		p.mu.Lock()
		p.codes[code] = q.Get("resource")
		p.resource = append(p.resource, q.Get("resource"))
		p.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		to.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	as.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		p.mu.Lock()
		defer p.mu.Unlock()
		grant := r.Form.Get("grant_type")
		p.grants = append(p.grants, grant)
		ok := false
		switch grant {
		case "authorization_code":
			_, ok = p.codes[r.Form.Get("code")]
			delete(p.codes, r.Form.Get("code"))
		case "refresh_token":
			ok = p.refresh[r.Form.Get("refresh_token")] && !p.refuse
		case "client_credentials":
			id, secret, basic := r.BasicAuth()
			if !basic {
				id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
			}
			ok = id == "svc" && secret == "s3cret"
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		access, refresh := "a-"+rand.Text(), "r-"+rand.Text()
		p.tokens[access] = time.Now().Add(p.life)
		p.refresh[refresh] = true
		json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": int(p.life.Seconds())})
	})

	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		exp, ok := p.tokens[tok]
		if !ok || time.Now().After(exp) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: exp}, nil
	}
	mux := http.NewServeMux()
	p.mcp = httptest.NewServer(mux)
	t.Cleanup(p.mcp.Close)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: p.mcp.URL + "/mcp", AuthorizationServers: []string{p.as.URL},
	}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: p.mcp.URL + "/.well-known/oauth-protected-resource/mcp"})(h))
	return p
}

func (p *protected) grantTypes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.grants...)
}

// follow is a stand-in browser: it follows the authorization URL, and
// the authorization server's redirect to bingo's loopback redirect URI.
func follow(_, u string) error {
	go func() {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}

// call connects to the server with h and calls its tool.
func (p *protected) call(t *testing.T, h *oauth.Handler) error {
	t.Helper()
	return p.callWith(t, h)
}

func (p *protected) callWith(t *testing.T, h auth.OAuthHandler) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.mcp.URL + "/mcp", OAuthHandler: h}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello"})
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("the tool failed")
	}
	return nil
}

// login, a restart with the stored token, its refresh (stored in turn),
// and a refused refresh with no one to ask: one error naming the
// authorization server and bingo mcp login.
func TestLoginStoreRefresh(t *testing.T) {
	p := newProtected(t, time.Hour)
	home := t.TempDir()
	opts := func(login bool) oauth.Options {
		return oauth.Options{Server: "prot", URL: p.mcp.URL + "/mcp", Store: oauth.Store{Dir: oauth.DefaultDir(home)}, Login: login,
			Open: follow, Getenv: func(string) string { return "" }, Wait: 10 * time.Second}
	}
	h, err := oauth.New(opts(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h); err != nil {
		t.Fatalf("login: %v", err)
	}
	if got := h.Authorized(); got != p.as.URL {
		t.Errorf("authorized at %q, want the issuer %q", got, p.as.URL)
	}
	if want := p.mcp.URL + "/mcp"; len(p.resource) != 1 || p.resource[0] != want {
		t.Errorf("resource parameter %q, want %q", p.resource, want)
	}
	for path, want := range map[string]os.FileMode{oauth.DefaultDir(home): 0o700 | os.ModeDir, h.File(): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want %v", path, fi.Mode(), err, want)
		}
	}

	// A restart: the stored token, and no authorization.
	h2, err := oauth.New(opts(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h2); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if n := len(p.resource); n != 1 {
		t.Errorf("%d authorizations, want the login's alone", n)
	}

	// The token expired (on the server, and in the store): the stored
	// refresh token gets a new one, which is stored in turn.
	p.mu.Lock()
	for k := range p.tokens {
		p.tokens[k] = time.Now().Add(-time.Second)
	}
	p.mu.Unlock()
	before, _ := os.ReadFile(h.File())
	stored := struct {
		URLs map[string]struct {
			Issuers map[string]struct {
				Token struct {
					Expiry time.Time `json:"expiry"`
				} `json:"token"`
			} `json:"issuers"`
		} `json:"urls"`
	}{}
	json.Unmarshal(before, &stored)
	raw := strings.Replace(string(before), stored.URLs[p.mcp.URL+"/mcp"].Issuers[p.as.URL].Token.Expiry.Format(time.RFC3339Nano), time.Now().Add(-time.Minute).Format(time.RFC3339Nano), 1)
	os.WriteFile(h.File(), []byte(raw), 0o600)
	h3, err := oauth.New(opts(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h3); err != nil {
		t.Fatalf("with an expired token: %v", err)
	}
	if g := p.grantTypes(); g[len(g)-1] != "refresh_token" {
		t.Errorf("grants %v, want a refresh", g)
	}
	after, _ := os.ReadFile(h.File())
	if string(after) == raw {
		t.Error("the refreshed token was not stored")
	}

	// The refresh token refused, and no terminal, no $BROWSER: one error
	// saying where to authorize and how.
	p.mu.Lock()
	p.refuse = true
	for k := range p.tokens {
		p.tokens[k] = time.Now().Add(-time.Second)
	}
	p.mu.Unlock()
	h4, err := oauth.New(opts(false))
	if err != nil {
		t.Fatal(err)
	}
	err = p.call(t, h4)
	if err == nil || !strings.Contains(err.Error(), "run `bingo mcp login prot`") || !strings.Contains(err.Error(), p.as.URL) || !errors.Is(err, oauth.ErrNoOneToAsk) {
		t.Errorf("with no one to ask: %v", err)
	}

	// At a terminal, the same: bingo says why, and opens the browser.
	var said []string
	o := opts(false)
	o.Terminal = true
	o.Say = func(msg string) { said = append(said, msg) }
	h5, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h5); err != nil {
		t.Fatalf("at a terminal: %v", err)
	}
	if want := "prot: its authorization has expired or was refused; opening your browser to authorize at " + p.as.URL; len(said) != 1 || said[0] != want {
		t.Errorf("said %q, want %q", said, want)
	}
	// Without one, where $BROWSER is set: no word, the browser opens.
	p.mu.Lock()
	for k := range p.tokens {
		p.tokens[k] = time.Now().Add(-time.Second)
	}
	p.mu.Unlock()
	o = opts(false)
	o.Getenv = func(k string) string { return map[string]string{"BROWSER": "stand-in"}[k] }
	h6, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h6); err != nil {
		t.Fatalf("with $BROWSER: %v", err)
	}

	// Logged out: nothing stored.
	if had, err := h.Store().Forget("prot"); !had || err != nil {
		t.Errorf("Forget = %v, %v", had, err)
	}
	if _, err := os.Stat(h.File()); !os.IsNotExist(err) {
		t.Errorf("after Forget: %v", err)
	}
}

// A grant is for the URL it was given for: the same name at another URL
// sends no token.
func TestGrantIsForItsURL(t *testing.T) {
	p := newProtected(t, time.Hour)
	home := t.TempDir()
	o := oauth.Options{Server: "prot", URL: p.mcp.URL + "/mcp", Store: oauth.Store{Dir: oauth.DefaultDir(home)}, Login: true, Open: follow, Wait: 10 * time.Second}
	h, _ := oauth.New(o)
	if err := p.call(t, h); err != nil {
		t.Fatal(err)
	}
	o.Login, o.URL = false, "https://elsewhere.example/mcp"
	h2, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ := h2.TokenSource(context.Background()); ts != nil {
		t.Error("a grant for another URL was used")
	}
}

// The same name authorized at another URL (a project's server named as
// the person's) keeps the person's grant: each URL has its own, and
// logout forgets them all.
func TestSameNameOtherURL(t *testing.T) {
	mine, theirs := newProtected(t, time.Hour), newProtected(t, time.Hour)
	store := oauth.Store{Dir: oauth.DefaultDir(t.TempDir())}
	opts := func(p *protected, login bool) oauth.Options {
		return oauth.Options{Server: "docs", URL: p.mcp.URL + "/mcp", Store: store, Login: login,
			Open: follow, Getenv: func(string) string { return "" }, Wait: 10 * time.Second}
	}
	for _, p := range []*protected{mine, theirs} {
		h, err := oauth.New(opts(p, true))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.call(t, h); err != nil {
			t.Fatalf("login: %v", err)
		}
	}
	for _, p := range []*protected{mine, theirs} {
		h, err := oauth.New(opts(p, false))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.call(t, h); err != nil {
			t.Errorf("%s after both logins: %v", p.mcp.URL, err)
		}
		if n := len(p.resource); n != 1 {
			t.Errorf("%s: %d authorizations, want the login's alone", p.mcp.URL, n)
		}
	}
	if had, err := store.Forget("docs"); !had || err != nil {
		t.Fatalf("Forget = %v, %v", had, err)
	}
	for _, p := range []*protected{mine, theirs} {
		h, err := oauth.New(opts(p, false))
		if err != nil {
			t.Fatal(err)
		}
		if ts, _ := h.TokenSource(context.Background()); ts != nil {
			t.Errorf("%s: a grant outlived logout", p.mcp.URL)
		}
	}
}

// A file written with one URL's record at its top is still read.
func TestStoreOneURLFile(t *testing.T) {
	p := newProtected(t, time.Hour)
	store := oauth.Store{Dir: oauth.DefaultDir(t.TempDir())}
	o := oauth.Options{Server: "docs", URL: p.mcp.URL + "/mcp", Store: store, Login: true, Open: follow, Wait: 10 * time.Second}
	h, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h); err != nil {
		t.Fatal(err)
	}
	var f struct {
		URLs map[string]map[string]any `json:"urls"`
	}
	data, _ := os.ReadFile(h.File())
	if err := json.Unmarshal(data, &f); err != nil || f.URLs[o.URL] == nil {
		t.Fatalf("%s: %v, %s", h.File(), err, data)
	}
	old := f.URLs[o.URL]
	old["url"] = o.URL
	data, _ = json.Marshal(old)
	if err := os.WriteFile(h.File(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	o.Login = false
	h2, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h2); err != nil {
		t.Fatalf("with the one-URL file: %v", err)
	}
	if n := len(p.resource); n != 1 {
		t.Errorf("%d authorizations, want the login's alone", n)
	}
}

// An entry's client credentials grant: bingo authorizes as the client,
// with no one asked and nothing stored.
func TestClientCredentials(t *testing.T) {
	p := newProtected(t, time.Hour)
	home := t.TempDir()
	h, err := oauth.Handle(oauth.Options{Server: "svc", URL: p.mcp.URL + "/mcp", Store: oauth.Store{Dir: oauth.DefaultDir(home)},
		ClientID: "svc", ClientSecret: "s3cret", Grant: manifest.GrantClientCredentials,
		Open: func(string, string) error { t.Error("a browser was opened"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.callWith(t, h); err != nil {
		t.Fatal(err)
	}
	if g := p.grantTypes(); len(g) != 1 || g[0] != "client_credentials" {
		t.Errorf("grants %v", g)
	}
	if _, err := os.Stat(oauth.DefaultDir(home)); !os.IsNotExist(err) {
		t.Errorf("something was stored: %v", err)
	}
}

// A request to the redirect URI with another state (anything on this
// machine can send one) neither fails the login nor ends its wait.
func TestCallbackOfAnotherState(t *testing.T) {
	p := newProtected(t, time.Hour)
	var stray int
	intruder := func(_, u string) error {
		au, err := url.Parse(u)
		if err != nil {
			return err
		}
		cb := au.Query().Get("redirect_uri") + "?" + url.Values{"error": {"access_denied"}, "state": {"not-" + au.Query().Get("state")}}.Encode()
		resp, err := http.Get(cb)
		if err != nil {
			return err
		}
		resp.Body.Close()
		stray = resp.StatusCode
		return follow("", u)
	}
	h, err := oauth.New(oauth.Options{Server: "prot", URL: p.mcp.URL + "/mcp", Store: oauth.Store{Dir: oauth.DefaultDir(t.TempDir())}, Login: true,
		Open: intruder, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.call(t, h); err != nil {
		t.Fatalf("login after a stray callback: %v", err)
	}
	if stray != http.StatusBadRequest {
		t.Errorf("the stray callback was answered %d, want %d", stray, http.StatusBadRequest)
	}
}

// Two requests answered 401 at once, with a fixed redirect port: one
// authorization runs, the browser opens once, and both go through.
func TestConcurrentAuthorize(t *testing.T) {
	p := newProtected(t, time.Hour)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var mu sync.Mutex
	opened := 0
	slow := func(_, u string) error {
		mu.Lock()
		opened++
		mu.Unlock()
		// The person takes a moment: the other request's 401 comes
		// while this authorization waits.
		time.Sleep(300 * time.Millisecond)
		return follow("", u)
	}
	h, err := oauth.New(oauth.Options{Server: "prot", URL: p.mcp.URL + "/mcp", Store: oauth.Store{Dir: oauth.DefaultDir(t.TempDir())}, Login: true,
		Open: slow, Port: port, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- p.call(t, h) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a call: %v", err)
		}
	}
	if opened != 1 {
		t.Errorf("the browser opened %d times, want once", opened)
	}
	if n := len(p.resource); n != 1 {
		t.Errorf("%d authorizations, want one", n)
	}
}
