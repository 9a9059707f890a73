package host

import (
	"context"
	"encoding/json"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/internal/testplugin"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport/mem"
)

// noticeLog collects notices; text is every notice, one a line.
type noticeLog struct {
	*testutil.Collector[bridge.Notice]
}

func newNoticeLog() noticeLog { return noticeLog{testutil.NewCollector[bridge.Notice]()} }

func (n noticeLog) text() string { return testutil.Lines(n.All()) }

// memPlugin is a plugin served in-process over the in-memory transport.
type memPlugin struct {
	name string
	main mem.Main
	// untrusted makes it a plugin of a project the person has not trusted.
	untrusted bool
}

func kit(p *pluginkit.Plugin) memPlugin {
	return memPlugin{name: p.Name, main: func(ctx context.Context, in io.Reader, out, _ io.Writer) error { return p.Serve(ctx, in, out) }}
}

// untrusted is mp as a plugin of a project the person has not trusted.
func untrusted(mp memPlugin) memPlugin {
	mp.untrusted = true
	return mp
}

var testPlugin = memPlugin{name: "testplugin", main: testplugin.Serve}

// newTestHost builds a host over in-memory plugins: the same bridge, proxies
// and registry as Open, without manifests on disk.
func newTestHost(t *testing.T, s settings.Settings, plugins ...memPlugin) (*Host, noticeLog) {
	t.Helper()
	n := newNoticeLog()
	g, err := gate.New(s.Permissions, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{cfg: Config{Cwd: t.TempDir(), Session: "s1", Notify: n.Add}, settings: s, gate: g,
		trust: &projectTrust{plugins: map[string]bool{}}}
	h.reg = registry.New(n.Add, nil)
	h.Agent = h.newAgent()
	for _, mp := range plugins {
		m := &manifest.Manifest{Name: mp.name, Layer: manifest.LayerUser}
		if mp.untrusted {
			m.Layer = manifest.LayerProject
			h.trust.plugins[mp.name] = false
		}
		p := bridge.New(bridge.Options{Name: mp.name, Transport: mem.New(mp.main, nil),
			Deadlines: s.Deadlines, Limits: s.Limits, Raise: n.Add, Services: h.routeService})
		h.plugins = append(h.plugins, &loaded{m: m, plugin: p})
		if _, err := p.Start(context.Background()); err != nil {
			t.Fatalf("start %s: %v", mp.name, err)
		}
		h.reg.Add(m.Name, p.Contributions())
	}
	t.Cleanup(func() { h.Close() })
	return h, n
}

// fakeUI records what the host asked of the person.
type fakeUI struct {
	mu        sync.Mutex
	approve   bool
	nobody    bool
	approvals []string
	progress  []string
	text      strings.Builder
	results   []sdk.ToolOutput
}

func (u *fakeUI) Progress(tool, tail string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.progress = append(u.progress, tool+": "+tail)
}

func (u *fakeUI) Ask(ctx context.Context, tool, q string) (string, error) {
	if u.nobody {
		return "", agent.ErrNoOneToAsk
	}
	return "yes", nil
}

func (u *fakeUI) Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.approvals = append(u.approvals, call.Name+": "+why)
	if u.nobody {
		return false, agent.ErrNoOneToAsk
	}
	return u.approve, nil
}

func (u *fakeUI) Text(d string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.text.WriteString(d)
}

func (u *fakeUI) ToolResult(_ sdk.ToolCallRequest, out sdk.ToolOutput, _ error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.results = append(u.results, out)
}

func withSettings(f func(*settings.Settings)) settings.Settings {
	s := settings.Default()
	if f != nil {
		f(&s)
	}
	return s
}

// In-process implementations of the sdk interfaces, for plugins written
// inline in tests.
type (
	providerFunc struct {
		id string
		f  func(ctx context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error)
	}
	contributorFunc struct {
		id string
		f  func(ctx context.Context, q sdk.Query) ([]sdk.Piece, error)
	}
	compactorFunc struct {
		id string
		f  func(ctx context.Context, r sdk.CompactRequest) (sdk.Compaction, error)
	}
	hookFunc struct {
		id string
		f  func(ctx context.Context, ev sdk.HookEvent) (sdk.HookDecision, error)
	}
	toolFunc struct {
		name string
		f    func(ctx context.Context, c sdk.ToolCall) (sdk.ToolOutput, error)
	}
)

func (p providerFunc) ID() string { return p.id }
func (p providerFunc) Stream(ctx context.Context, r sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	return p.f(ctx, r, emit)
}
func (c contributorFunc) ID() string { return c.id }
func (c contributorFunc) Contribute(ctx context.Context, q sdk.Query) ([]sdk.Piece, error) {
	return c.f(ctx, q)
}
func (c compactorFunc) ID() string { return c.id }
func (c compactorFunc) Compact(ctx context.Context, r sdk.CompactRequest) (sdk.Compaction, error) {
	return c.f(ctx, r)
}
func (h hookFunc) ID() string { return h.id }
func (h hookFunc) Decide(ctx context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
	return h.f(ctx, ev)
}
func (hookFunc) Observe(context.Context, sdk.HookEvent) {}
func (t toolFunc) Spec() sdk.ToolSpec {
	return sdk.ToolSpec{Name: t.name, Description: t.name, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (toolFunc) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }
func (t toolFunc) Call(ctx context.Context, c sdk.ToolCall, _ sdk.CallUI) (sdk.ToolOutput, error) {
	return t.f(ctx, c)
}

func textOut(s string) sdk.ToolOutput { return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(s)}} }
