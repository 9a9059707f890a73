package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Config configures a Provider. It is read once, by New.
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1; "/chat/completions" is appended (a URL that
	// already ends with it is used as is). Required.
	BaseURL string
	// Model is the model name sent when the request names none. Required.
	Model string
	// APIKeyEnv names the environment variable holding the API key, read at
	// each request. "" sends no Authorization header (local servers).
	APIKeyEnv string
	// Deadlines and Limits bound each stream as they bound a provider
	// plugin's (package bridge): Deadlines.Provider the wait for the
	// first chunk of the answer (connecting and the headers included),
	// ProviderIdle the silence after each chunk, ProviderTotal the whole
	// stream however lively, and Limits.ProviderResponseMiB the bytes of
	// the response body. A zero field takes its default (package bounds).
	Deadlines bounds.Deadlines
	Limits    bounds.Limits
	// Notify hears, in one line, why a stream was cut off past its total
	// deadline or its cap (the stream's error says so too), as the bridge
	// raises a notice for a plugin's; nil drops it. It is called from a
	// timer's goroutine or the streaming one.
	Notify func(string)
	// HTTPClient sends the requests. nil means a client with timeouts for
	// connecting and the TLS handshake; the rest is Deadlines'.
	HTTPClient *http.Client
	// Getenv reads the environment. nil means os.Getenv; tests inject.
	Getenv func(string) string
}

// Provider is an sdk.Provider that streams from an OpenAI-compatible Chat
// Completions endpoint. It is safe for concurrent use.
type Provider struct {
	id      string
	baseURL string // as configured, for error hints
	url     string // the chat completions endpoint
	model   string
	// official is OpenAI's own API, which bounds an answer with
	// max_completion_tokens (max_tokens is deprecated there, and refused
	// by its reasoning models); the servers that copy its wire know
	// max_tokens.
	official  bool
	keyEnv    string
	client    *http.Client
	getenv    func(string) string
	deadlines bounds.Deadlines
	limits    bounds.Limits
	notify    func(string)
}

var _ sdk.Provider = (*Provider)(nil)

// Timeouts of the default client. The wait for the headers is not one of
// them: it is part of the wait for the first chunk (Deadlines.Provider),
// which the person sets, say for a local server that loads its model
// from disk first.
const (
	dialTimeout = 30 * time.Second
	tlsTimeout  = 10 * time.Second
)

// New validates cfg and returns a provider named id.
func New(id string, cfg Config) (*Provider, error) {
	if strings.TrimSpace(id) == "" {
		return nil, errors.New("openai provider: an id is required")
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("openai provider %q: baseURL is required (e.g. https://api.openai.com/v1 or http://localhost:11434/v1)", id)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider %q: baseURL %q is not an http(s) URL (e.g. https://api.openai.com/v1)", id, cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai provider %q: model is required (e.g. gpt-4o-mini, or the name of a model the server has loaded)", id)
	}
	endpoint := strings.TrimRight(cfg.BaseURL, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	p := &Provider{
		id:        id,
		baseURL:   cfg.BaseURL,
		url:       endpoint,
		model:     cfg.Model,
		official:  u.Hostname() == "api.openai.com",
		keyEnv:    cfg.APIKeyEnv,
		client:    cfg.HTTPClient,
		getenv:    cfg.Getenv,
		deadlines: cfg.Deadlines.WithDefaults(),
		limits:    cfg.Limits.WithDefaults(),
		notify:    cfg.Notify,
	}
	if p.client == nil {
		p.client = defaultClient()
	}
	if p.getenv == nil {
		p.getenv = os.Getenv
	}
	return p, nil
}

func defaultClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   tlsTimeout,
		ExpectContinueTimeout: time.Second,
	}}
}

// ID is the provider's id, as given to New.
func (p *Provider) ID() string { return p.id }

// CloseIdleConnections closes the HTTP client's idle keep-alive connections;
// the host calls it when it stops using the provider. The provider stays
// usable.
func (p *Provider) CloseIdleConnections() { p.client.CloseIdleConnections() }

// Stream sends req and calls emit for each text or tool-call piece of the
// answer, in order, on the calling goroutine. It returns once the stream has
// ended, with the finish reason; cancelling ctx stops it at once, and so
// does passing one of its bounds (Config.Deadlines, Config.Limits).
func (p *Provider) Stream(ctx context.Context, req sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	if emit == nil {
		emit = func(sdk.StreamEvent) {}
	}
	if err := ctx.Err(); err != nil {
		return sdk.StreamEnd{}, p.cancelled(err)
	}
	var key string
	if p.keyEnv != "" {
		key = p.getenv(p.keyEnv)
		if key == "" {
			return sdk.StreamEnd{}, fmt.Errorf("openai provider %q: %w: set %s to the API key (or leave apiKeyEnv empty for a server that needs none)", p.id, ErrMissingAPIKey, p.keyEnv)
		}
	}
	body, err := p.requestBody(req)
	if err != nil {
		return sdk.StreamEnd{}, err
	}
	ctx, g := p.guard(ctx)
	defer g.stop()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return sdk.StreamEnd{}, fmt.Errorf("openai provider %q: building the request: %v", p.id, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return sdk.StreamEnd{}, p.stopped(ctx)
		}
		return sdk.StreamEnd{}, fmt.Errorf("openai provider %q: cannot reach %s: %v; check the base URL and that the server is running", p.id, p.url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sdk.StreamEnd{}, p.statusError(ctx, resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		return sdk.StreamEnd{}, p.notStreaming(ctx, resp.Body)
	}
	// The body is not drained after [DONE]: a server that keeps it open
	// would hold Stream past the end of the answer. Closing it costs at
	// most the connection's reuse.
	return p.readStream(ctx, g.body(resp.Body), emit, g.chunk)
}

// cancelled is the error for a request stopped by its context.
func (p *Provider) cancelled(err error) error {
	return fmt.Errorf("openai provider %q: request stopped: %w", p.id, err)
}

// stopped is the error of a request whose context ended: the bound's
// that ended it (its cause), or the caller's cancellation.
func (p *Provider) stopped(ctx context.Context) error {
	var late *DeadlineError
	var large *TooLargeError
	if cause := context.Cause(ctx); errors.As(cause, &late) || errors.As(cause, &large) {
		return cause
	}
	return p.cancelled(ctx.Err())
}

// unwrapURLError drops *url.Error's "Post "<url>": " prefix, since the
// message names the URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 64 << 10

// statusError reads the start of a non-200 answer for the API's message.
func (p *Provider) statusError(ctx context.Context, resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return p.stopped(ctx)
	}
	e := &StatusError{Provider: p.id, StatusCode: resp.StatusCode, hint: p.statusHint(resp.StatusCode)}
	if ae, ok := parseAPIError(data); ok {
		e.Message = ae.Message
	} else {
		e.Message = render.Brief(string(data), maxMessage)
	}
	return e
}

// notStreaming reports a server that answered a streaming request with one
// JSON document: either an error in the OpenAI shape, or a server that does
// not stream.
func (p *Provider) notStreaming(ctx context.Context, body io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return p.stopped(ctx)
	}
	if ae, ok := parseAPIError(data); ok {
		return &StreamError{Provider: p.id, Message: ae.Message, Type: ae.Type, Code: ae.Code}
	}
	return fmt.Errorf("openai provider %q: %w: the server answered with JSON instead of an event stream; it does not support stream:true, use a server that does", p.id, ErrMalformed)
}
