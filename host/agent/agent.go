package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Plugins is what a conversation needs of the plugin set it runs against
// (package host's Host) beyond its registry: the rules that decide which
// provider answers, what the hooks say, and whom the person trusts.
type Plugins interface {
	// Provider returns the model provider the settings choose.
	Provider() (sdk.Provider, error)
	// Decide asks every hook that declared at, at once, and returns the
	// strictest decision and the id of the hook that made it.
	Decide(ctx context.Context, at sdk.HookPoint, payload any) (d sdk.HookDecision, hook string)
	// Observe tells every hook that declared at what happened, in order,
	// without waiting.
	Observe(at sdk.HookPoint, payload any)
	// Untrusted reports whether owner is a plugin of a project the person
	// has not trusted; HowToTrust says how to trust it, the end of a
	// notice about what such a plugin may not do.
	Untrusted(owner string) bool
	HowToTrust() string
}

// Config is what an Agent runs with. Plugins, Registry and Gate are
// required.
type Config struct {
	Plugins  Plugins
	Registry *registry.Registry
	Gate     *gate.Gate
	Turn     settings.Turn // a turn's bounds
	Cwd      string        // the session's working directory
	Session  string        // names the session
	// ResultsDir is where a tool result cut for the model is kept whole,
	// one file each (~/.bingo/data/results), pruned as turns start
	// (pruneResults).
	ResultsDir string
	// Notify receives the conversation's notices. It must be safe for
	// concurrent use.
	Notify func(bridge.Notice)
	// NotInForce ends advice about a setting when a settings file was
	// skipped for an error, so that what it sets is not in force ("" when
	// every file applied).
	NotInForce string
}

// Agent is one conversation with the model over a plugin set: its turns,
// its compaction and the tool calls it runs. It is safe for concurrent
// use; turns run one at a time.
type Agent struct {
	cfg Config

	mu      sync.Mutex // one turn at a time
	conv    []sdk.Message
	turns   int
	compact compactState // guarded by mu
	// results are the files holding the whole of each result cut for the
	// model (bingo__read_result's ids), cutResults how many were cut.
	results    map[string]string
	cutResults int
	// spans are the parts of kept results that tool messages of the
	// conversation hold, by their content (see span).
	spans map[string]span
	// used are the tools the conversation called, the latest last; found
	// those the model found with bingo__tool_search this turn. Both
	// choose what toolSpecs offers past turn.toolsMax.
	used  []string
	found map[string]bool

	// release ends the session's lock on its kept results (holdSession).
	release atomic.Pointer[func()]

	calls atomic.Uint64 // names the session's tool calls (see CallTool)
}

// New returns an agent with an empty conversation, and registers its own
// commands (/compact) as the host's.
func New(cfg Config) *Agent {
	if cfg.Notify == nil {
		cfg.Notify = func(bridge.Notice) {}
	}
	a := &Agent{cfg: cfg}
	cfg.Registry.AddCommand("", compactCommand{a})
	return a
}

// notice raises a notice of the host's own.
func (a *Agent) notice(level, format string, args ...any) {
	a.cfg.Notify(bridge.Notice{Level: level, Message: fmt.Sprintf(format, args...)})
}
