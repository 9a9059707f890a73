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
	// HTTPClient sends the requests. nil means a client with timeouts for
	// connecting, the TLS handshake and the response headers, but none for
	// the streamed body.
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
	official bool
	keyEnv   string
	client   *http.Client
	getenv   func(string) string
}

var _ sdk.Provider = (*Provider)(nil)

// Timeouts of the default client. The body is never bounded: a streamed
// answer may take as long as it takes, and ctx is the caller's bound.
const (
	dialTimeout   = 30 * time.Second
	tlsTimeout    = 10 * time.Second
	headerTimeout = 5 * time.Minute // a local server may load a model first
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
		id:       id,
		baseURL:  cfg.BaseURL,
		url:      endpoint,
		model:    cfg.Model,
		official: u.Hostname() == "api.openai.com",
		keyEnv:   cfg.APIKeyEnv,
		client:   cfg.HTTPClient,
		getenv:   cfg.Getenv,
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
		ResponseHeaderTimeout: headerTimeout,
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
// ended, with the finish reason; cancelling ctx stops it at once.
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
			return sdk.StreamEnd{}, p.cancelled(ctx.Err())
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
	return p.readStream(ctx, resp.Body, emit)
}

// cancelled is the error for a request stopped by its context.
func (p *Provider) cancelled(err error) error {
	return fmt.Errorf("openai provider %q: request stopped: %w", p.id, err)
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
		return p.cancelled(ctx.Err())
	}
	e := &StatusError{Provider: p.id, StatusCode: resp.StatusCode, hint: p.statusHint(resp.StatusCode)}
	if ae, ok := parseAPIError(data); ok {
		e.Message = ae.Message
	} else {
		e.Message = oneLine(string(data))
	}
	return e
}

// notStreaming reports a server that answered a streaming request with one
// JSON document: either an error in the OpenAI shape, or a server that does
// not stream.
func (p *Provider) notStreaming(ctx context.Context, body io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return p.cancelled(ctx.Err())
	}
	if ae, ok := parseAPIError(data); ok {
		return &StreamError{Provider: p.id, Message: ae.Message, Type: ae.Type, Code: ae.Code}
	}
	return fmt.Errorf("openai provider %q: %w: the server answered with JSON instead of an event stream; it does not support stream:true, use a server that does", p.id, ErrMalformed)
}
