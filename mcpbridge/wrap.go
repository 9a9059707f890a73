package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// Config is what the translator needs beyond the MCP server itself.
type Config struct {
	// Name is the plugin's name, from its manifest: the name the
	// translator declares. The server's own name is written to Log and
	// never believed.
	Name string
	// Version is the manifest's version, declared when the server gives
	// none.
	Version string
	// Log is the plugin's log: the server's logging notifications land
	// here, with the server's name and what it said at initialize. Nil
	// discards them.
	Log io.Writer
	// Resources, when set, declares a context contributor that offers the
	// server's resources to the model (the person's setting
	// mcp.<name>.resources). Off, the server's resources are never read.
	Resources bool
	// Sample, when set, answers the server's sampling/createMessage
	// requests (the person's setting mcp.<name>.sampling). Unset, every
	// sampling request is refused. The host routes it through its
	// configured provider.
	//
	// Sampling is answered only while the server answers one of its tool
	// calls (the call is found as for elicitation), and at most
	// MaxSamples times for one call: past that, each request is refused,
	// with one notice for the call. Each request's maxTokens is held to
	// MaxTokens (asking none is asking MaxTokens).
	Sample func(ctx context.Context, req SampleRequest) (SampleResult, error)
	// MaxSamples is the most sampling requests one tool call may make
	// (the person's turn.maxSteps: one call of a tool may not cost more
	// model responses than a turn); 0 is DefaultMaxSamples.
	MaxSamples int
	// MaxTokens caps each sampling request's maxTokens (the person's
	// mcp.<name>.maxTokens); 0 is DefaultMaxTokens.
	MaxTokens int
	// Root is the directory offered to the server as its one root (the
	// roots capability, without listChanged; roots/list answers its
	// file:// URI): the working directory, where the server can reach
	// it. Empty offers no root and declares no roots capability.
	Root string
	// Trace, when set, writes every line of the MCP wire, both ways, into
	// Log, stamped as the bridge stamps the plugin wire's (--trace), its
	// direction "mcp ->" (to the server) or "mcp <-" (from it). What a
	// remote server's transport carries besides (HTTP headers, a bearer
	// token) is no line of it, and never written.
	Trace bool
	// Deadlines are the bridge's (the person's deadlines settings; zero
	// fields take their defaults). The wire has no cancel for
	// context/contribute, command/run or command/complete, so the
	// translator ends each at its deadline itself, when the bridge has
	// stopped waiting: see server.bounded.
	Deadlines bounds.Deadlines
}

// The defaults of Config.MaxSamples and Config.MaxTokens.
const (
	DefaultMaxSamples = 20
	DefaultMaxTokens  = 4096
)

// SampleRequest is a server's sampling request, in the host's words.
type SampleRequest struct {
	System    string
	Messages  []sdk.Message
	MaxTokens int
}

// SampleResult is the host's answer to a sampling request: the model's
// text, and the model that answered, which the server is told (the spec's
// CreateMessageResult.model).
type SampleResult struct {
	Text  string
	Model string
}

// Wrap returns a transport whose instances speak the bingo plugin wire,
// each translating for one instance of the MCP server inner starts. The
// bridge drives it like any plugin; Kind is inner's, since that is what
// runs.
func Wrap(inner transport.Transport, cfg Config) transport.Transport {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	cfg.Deadlines = cfg.Deadlines.WithDefaults()
	if cfg.MaxSamples <= 0 {
		cfg.MaxSamples = DefaultMaxSamples
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	return &wrapped{inner: inner, cfg: cfg}
}

type wrapped struct {
	inner transport.Transport
	cfg   Config
	told  sync.Map // the tools withheld for requiring tasks that a notice has named
}

func (w *wrapped) Kind() string { return w.inner.Kind() }

// Start starts the MCP server and, in this process, its translator; the
// Conn returned is the translator's bingo side. Killing it kills the
// server; the server ending ends it, with the server's exit as its Wait.
func (w *wrapped) Start(ctx context.Context) (transport.Conn, error) {
	conn, err := w.inner.Start(ctx)
	if err != nil {
		return nil, err
	}
	translator, err := mem.New(func(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
		return serve(ctx, conn, stdin, stdout, w.cfg, &w.told)
	}, nil).Start(ctx)
	if err != nil {
		_ = conn.Kill()
		return nil, err
	}
	return exited{translator, conn}, nil
}

// exited is the translator's Conn with the server's exit as its own: the
// translator ends only once the server has, and a server that exits
// cleanly when its stdin closes has exited cleanly, however the host
// stopped the translator (the in-memory transport calls any end after
// Kill a kill). A server the translator killed (see server.stop) ended
// for the translator's reason, not for the kill.
type exited struct {
	transport.Conn
	server transport.Conn
}

func (c exited) Wait() error {
	var st *stopped
	if err := c.Conn.Wait(); errors.As(err, &st) {
		return err
	}
	return c.server.Wait()
}

// rawJSON marshals v for the bingo wire, which carries schemas and
// structured values as raw JSON.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
