package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// waitLimit bounds every wait for something asynchronous (a notice, a line
// of stderr, a status).
const waitLimit = testutil.WaitLimit

// rig is one bridge.Plugin started over one transport, with everything it
// says recorded: its notices, its wire log (Options.Log) and its stderr
// (the transport's writer), kept apart so a case can tell which went where.
type rig struct {
	t       testing.TB
	plugin  *bridge.Plugin
	decl    protocol.InitializeResult
	c       bridge.Contributions
	tap     *tap
	notices *testutil.Collector[bridge.Notice]
	log     *testutil.SyncBuffer // Options.Log: what the bridge says about the wire
	stderr  *testutil.SyncBuffer // the transport's stderr writer: the plugin's own log
	nextID  atomic.Int64
}

// newTransport makes a transport for one plugin whose stderr goes to w.
type newTransport func(stderr io.Writer) transport.Transport

// tryStartRig starts plugin name over the transport nt makes. tweak
// adjusts the options after the suite's defaults are set. The plugin is
// closed when the test ends. A start that fails returns its error with the
// plugin's stderr.
func tryStartRig(t testing.TB, name string, nt newTransport, tweak func(*bridge.Options)) (*rig, error) {
	t.Helper()
	r := &rig{t: t, notices: testutil.NewCollector[bridge.Notice](), log: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}}
	r.tap = &tap{Transport: nt(r.stderr), toolCalls: make(chan struct{}, 16)}
	opts := bridge.Options{
		Name:      name,
		Root:      "/plugins/" + name,
		Transport: r.tap,
		Raise:     r.notices.Add,
		Log:       r.log,
		// The first respawn after a death is immediate (so is the default);
		// spelled out because the death cases depend on it.
		Backoff: bridge.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Reset: time.Hour},
	}
	if tweak != nil {
		tweak(&opts)
	}
	r.plugin = bridge.New(opts)
	t.Cleanup(func() { r.plugin.Close() })
	decl, err := r.plugin.Start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("start %s over %s: %w (its stderr: %q)", name, r.tap.Kind(), err, r.stderr.String())
	}
	r.decl = decl
	r.c = r.plugin.Contributions()
	return r, nil
}

// tool returns the plugin's tool whose host-facing name ends in __short.
func (r *rig) tool(short string) *proxy.Tool {
	r.t.Helper()
	want := proxy.ToolName(r.plugin.Name(), short)
	for _, tl := range r.c.Tools {
		if tl.Spec().Name == want {
			return tl
		}
	}
	r.t.Fatalf("no tool %s among %d", want, len(r.c.Tools))
	return nil
}

// command returns the plugin's command name.
func (r *rig) command(name string) *proxy.Command {
	r.t.Helper()
	for _, c := range r.c.Commands {
		if c.Spec().Name == name {
			return c
		}
	}
	r.t.Fatalf("no command %s", name)
	return nil
}

// call calls tool short with input (JSON), in cwd, with a fresh call id.
func (r *rig) call(ctx context.Context, short, input, cwd string, ui sdk.CallUI) (sdk.ToolOutput, error) {
	r.t.Helper()
	if ui == nil {
		ui = &testutil.RecordingUI{}
	}
	tl := r.tool(short)
	return tl.Call(ctx, sdk.ToolCall{
		ID: fmt.Sprintf("call-%d", r.nextID.Add(1)), Name: tl.Spec().Name,
		Input: json.RawMessage(input), Cwd: cwd, Session: "conformance",
	}, ui)
}

// mustCall is call that fails the test on an error.
func (r *rig) mustCall(short, input, cwd string, ui sdk.CallUI) sdk.ToolOutput {
	r.t.Helper()
	out, err := r.call(context.Background(), short, input, cwd, ui)
	if err != nil {
		r.t.Fatalf("%s: %v\nlog:\n%s\nstderr:\n%s", short, err, r.log.String(), r.stderr.String())
	}
	return out
}

// waitStatus waits for the plugin's status to become want. The bridge has
// no event for it (a wedged instance is killed after its notice), so this
// polls, bounded by waitLimit.
func (r *rig) waitStatus(want string) {
	r.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for r.plugin.Status() != want {
		if time.Now().After(deadline) {
			r.t.Fatalf("status = %s, want %s", r.plugin.Status(), want)
		}
		time.Sleep(time.Millisecond) // polling: nothing to wait on
	}
}

// tap wraps a transport to count its starts and to see what the bridge
// writes to each instance: the cancel case cancels only once the tool/call
// line has gone out, and checks a tool/cancel followed it.
type tap struct {
	transport.Transport
	starts    atomic.Int32
	toolCalls chan struct{} // one per tool/call line written

	mu      sync.Mutex
	methods []string // of every request and notification written
}

func (t *tap) Start(ctx context.Context) (transport.Conn, error) {
	t.starts.Add(1)
	c, err := t.Transport.Start(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: c, t: t}, nil
}

func (t *tap) wrote(method string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.methods {
		if m == method {
			return true
		}
	}
	return false
}

type tapConn struct {
	transport.Conn
	t *tap
}

// Write sees one whole line per call: protocol.LineStream writes each
// message with a single Write.
func (c *tapConn) Write(p []byte) (int, error) {
	// Record before writing: once written, the plugin may answer and the
	// test look at the record before this Write returns.
	var m struct{ Method string }
	if json.Unmarshal(p, &m) == nil && m.Method != "" {
		c.t.mu.Lock()
		c.t.methods = append(c.t.methods, m.Method)
		c.t.mu.Unlock()
		if m.Method == protocol.MethodToolCall {
			select {
			case c.t.toolCalls <- struct{}{}:
			default:
			}
		}
	}
	return c.Conn.Write(p)
}

// jsonOf is v as JSON, for comparing answers byte for byte and for
// failure messages.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
