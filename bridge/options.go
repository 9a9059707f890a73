package bridge

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// Backoff spaces respawns of a plugin that keeps dying. The first death is
// respawned by the next read at once; each further death in a row doubles
// the wait from Initial, up to Max. An instance that lived Reset or longer
// starts the count again.
type Backoff struct {
	Initial, Max, Reset time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Reset <= 0 {
		b.Reset = time.Minute
	}
	return b
}

// delay is the wait before the respawn that follows the n-th death in a
// row (n ≥ 1).
func (b Backoff) delay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := b.Initial
	for i := 2; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// backoff is where a plugin stands in its Backoff: its deaths in a row,
// and when the next respawn may begin. It changes only through its
// methods.
type backoff struct {
	policy  Backoff
	deaths  int       // in a row
	retryAt time.Time // no respawn before this
}

// died counts a death, or a failed restart (lived 0), at now. An instance
// that lived policy.Reset or longer starts the count again.
func (b *backoff) died(now time.Time, lived time.Duration) {
	if lived >= b.policy.Reset {
		b.deaths = 0
	}
	b.deaths++
	b.retryAt = now.Add(b.policy.delay(b.deaths))
}

// healthy forgets the deaths: the instance lived and was left alone.
func (b *backoff) healthy() { b.deaths, b.retryAt = 0, time.Time{} }

// wait is how long from now until a respawn may begin: 0 if it may now.
func (b *backoff) wait(now time.Time) time.Duration { return max(b.retryAt.Sub(now), 0) }

// Notice is one line for the person, under a plugin's name.
type Notice struct {
	Plugin  string // "" for the host's own notices
	Level   string // "info", "warn" or "error"
	Message string
}

func (n Notice) String() string {
	if n.Plugin == "" {
		return n.Message
	}
	return "plugin " + n.Plugin + ": " + n.Message
}

// ServiceRouter answers a plugin's service/call for any key other than
// bingo.host: it routes by key to whoever declared it.
type ServiceRouter func(ctx context.Context, from, key, method string, params json.RawMessage) (json.RawMessage, error)

// Options configure a Plugin. Name, Root and Transport are required; every
// other zero field takes its default.
type Options struct {
	Name      string // the manifest's name; the process must answer the same
	Root      string // sent as initialize.pluginRoot
	Transport transport.Transport
	Config    json.RawMessage   // the person's plugins.<name> slice
	Env       map[string]string // the manifest's entry.env, expanded
	DataDir   string            // sent as initialize.dataDir; "" sends none

	Deadlines bounds.Deadlines
	Limits    bounds.Limits
	Backoff   Backoff
	// MaxLine caps one wire line (protocol.DefaultMaxLine if 0).
	MaxLine int
	// Budget, if set, is shared with other plugins (a project's) whose
	// declarations may hold only so much together (DeclarationBudget).
	Budget *DeclarationBudget

	// Raise receives the notices the bridge raises for the person: deaths,
	// refusals, a plugin's own notice. (Plugin.Notify is another thing: it
	// sends the plugin a notification.)
	Raise func(Notice)
	// Log receives what the bridge has to say about the wire (skipped
	// lines, stray answers) and the plugin's notices not shown. It should
	// be the plugin's log, the same writer its stderr goes to. It must be
	// safe for concurrent use.
	Log io.Writer
	// Trace, if set, writes every wire line both ways into Log, each
	// prefixed with an RFC 3339 timestamp and its direction: "->" host to
	// plugin, "<-" plugin to host.
	Trace bool
	// LogPath is Log's file name, for the messages that send the person
	// to it ("see its log"); "" names none.
	LogPath string
	// Probe, if set, turns on the wedge rule's liveness probe: the method
	// of a request (no params) the bridge sends when one of the instance's
	// requests passes its deadline unanswered, due Grace later, and whose
	// answer shows the instance alive. Such a plugin's answers past their
	// requests' deadlines show nothing: it is a translator (mcpbridge),
	// which gives them itself once it has stopped waiting for the server
	// behind it. See wedgeTracker.
	Probe string
	// Services routes plugin → host service calls other than bingo.host.
	Services ServiceRouter
	// Clock is the time every deadline, the wedge rule, the idle stop and
	// the backoff read; nil is the system's.
	Clock Clock

	// Declared, if set, is the plugin's declaration as a handshake kept
	// it before (the host's declaration cache): the plugin contributes
	// from it at once, and its first instance starts on the first read,
	// through the respawn path (see the package doc, "Lazy start").
	Declared *protocol.InitializeResult
	// Redeclared, if set, is called with the declaration held whenever it
	// changes: a handshake kept one that differs from the one held (a
	// Declared that has gone stale, a plugin that changed between two
	// starts), handshake true; or the live plugin sent a new one of its
	// own accord (plugin/declare), handshake false. The plugin's proxies
	// are then those of the new declaration, and whoever registered the
	// old ones should register Contributions again. Only a handshake's is
	// what a cache of handshakes (Declared's source) should hold: a
	// plugin/declare is not what the next handshake will declare. It is
	// called without locks held, on the read that started the instance or
	// on the instance's wire reader: it must not call the plugin.
	Redeclared func(decl protocol.InitializeResult, handshake bool)
}
