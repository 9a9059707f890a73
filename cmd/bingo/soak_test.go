package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// soakCalls is how many tool calls TestSoak makes: its short form, which
// make test runs; BINGO_SOAK_CALLS sets the long form's (docs/performance.md,
// "A long session").
const soakCalls = 2000

// A long session stays flat: one host makes tool calls round-robin over an
// exec plugin, a wasm plugin and an MCP server, with a cancelled call every
// 50 calls, a missed deadline and a respawn every 300, and the process's
// RSS, goroutines and open file descriptors after the last call are within
// 10 % of what they were after the first thousand. The wasm plugin's missed
// deadline is a call that spins: the wedge rule must stop it, under the
// soak's traffic, within the deadline, the grace and 2 s, after which its
// calls are answered again.
func TestSoak(t *testing.T) {
	calls := soakCalls
	if s := os.Getenv("BINGO_SOAK_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2000 {
			t.Fatalf("BINGO_SOAK_CALLS=%q: want a number of calls, at least 2000", s)
		}
		calls = n
	}
	buildMCP(t)
	home, cwd := t.TempDir(), t.TempDir()
	if err := linkWasmCache(home); err != nil {
		t.Fatal(err)
	}
	plugins := filepath.Join(home, ".bingo", "plugins")
	copyPlugin := func(name, file, from, manifest string) {
		dir := filepath.Join(plugins, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.json"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyPlugin("tpexec", "testplugin", filepath.Join(testpluginExec, "testplugin", "testplugin"),
		`{"name": "tpexec", "version": "1", "entry": {"command": "${PLUGIN_ROOT}/testplugin", "env": {"TESTPLUGIN_NAME": "tpexec"}}}`)
	copyPlugin("tpwasm", "plugin.wasm", filepath.Join(testpluginWasm, "testplugin", "plugin.wasm"),
		`{"name": "tpwasm", "version": "1", "entry": {"wasm": "${PLUGIN_ROOT}/plugin.wasm", "env": {"TESTPLUGIN_NAME": "tpwasm"}}}`)
	copyPlugin("fault", "mcpfault", filepath.Join(mcpBuild.fault, "mcpfault"),
		`{"name": "fault", "version": "1", "entry": {"command": "${PLUGIN_ROOT}/mcpfault", "protocol": "mcp"}}`)
	const deadline, grace = time.Second, time.Second
	settings := `{"deadlines": {"tool": "1s", "grace": "1s", "initialize": "1m"}}`
	if err := os.WriteFile(filepath.Join(home, ".bingo", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var notices []string
	h, err := host.Open(context.Background(), host.Config{Home: home, Cwd: cwd, Allow: []string{"plugin__*"},
		// Each respawn here is on purpose: none waits for a backoff.
		Backoff: bridge.Backoff{Initial: time.Millisecond, Max: time.Millisecond},
		Notify: func(n bridge.Notice) {
			mu.Lock()
			notices = append(notices, n.String())
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("notices: %q", notices)
			mu.Unlock()
		}
	})

	// What each plugin is asked: its plain call, one that waits until it
	// is cancelled, and one that ends its instance.
	type kind struct{ name, echo, wait, miss, die string }
	kinds := []kind{
		{"plugin__tpexec__", `echo:{"text":"soak"}`, `slow:{"ms":60000}`, `slow:{"ms":60000}`, `exit:{"code":0}`},
		{"plugin__tpwasm__", `echo:{"text":"soak"}`, `slow:{"ms":60000}`, `spin:{}`, `exit:{"code":0}`},
		{"plugin__fault__", `echo:{"text":"soak"}`, `hang:{}`, `hang:{}`, `crash:{}`},
	}
	// spun is when each plugin's last call that spins began: until the
	// wedge rule has stopped it, that plugin's calls may fail.
	spun := map[string]time.Time{}
	spins := 0
	call := func(ctx context.Context, k kind, what string) (sdk.ToolOutput, error) {
		tool, input, _ := strings.Cut(what, ":")
		return h.CallTool(ctx, sdk.ToolCallRequest{Name: k.name + tool, Input: json.RawMessage(input)}, 0, soakUI{})
	}
	var first, last soakFigures
	began := time.Now()
	var dies, misses, cancels int // the rare calls go to each plugin in turn
	for i := range calls {
		k := kinds[i%len(kinds)]
		switch {
		case i%300 == 150: // a respawn: the instance ends mid-call
			k = kinds[dies%len(kinds)]
			dies++
			if _, err := call(context.Background(), k, k.die); !errors.Is(err, sdk.ErrUnavailable) {
				t.Fatalf("call %d, %s%s: %v, want the instance to end", i, k.name, k.die, err)
			}
			// Past the backoff, a call starts it again: one within it is
			// refused at once.
			time.Sleep(10 * time.Millisecond)
		case i%300 == 75: // a missed deadline: the call is cancelled, and answers late
			k = kinds[misses%len(kinds)]
			misses++
			if k.miss == `spin:{}` {
				spun[k.name] = time.Now()
				spins++
			}
			if _, err := call(context.Background(), k, k.miss); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call %d, %s%s: %v, want its deadline", i, k.name, k.miss, err)
			}
		case i%50 == 25: // an interrupt: cancelled, it answers
			k = kinds[cancels%len(kinds)]
			cancels++
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			out, err := call(ctx, k, k.wait)
			cancel()
			if err != nil || !strings.Contains(out.Text(), "cancelled") {
				t.Fatalf("call %d, %s%s cancelled: %q, %v; want its answer", i, k.name, k.wait, out.Text(), err)
			}
		default:
			out, err := call(context.Background(), k, k.echo)
			if err == nil && strings.Contains(out.Text(), "soak") {
				break
			}
			since := time.Since(spun[k.name])
			if since <= deadline+grace+2*time.Second {
				// The instance spins; the wedge rule is about to stop it.
				time.Sleep(10 * time.Millisecond) // past the backoff, once it has
				break
			}
			t.Fatalf("call %d, %s%s, %s after its plugin's last call that spun began: %q, %v", i, k.name, k.echo, since.Round(time.Millisecond), out.Text(), err)
		}
		switch i + 1 {
		case 1000:
			first = settle(t, func() {
				for _, k := range kinds {
					call(context.Background(), k, k.echo)
				}
			})
		case calls:
			last = settle(t, func() {
				for _, k := range kinds {
					call(context.Background(), k, k.echo)
				}
			})
		}
	}
	t.Logf("%d calls in %s; after 1000: %s; after %d: %s", calls, time.Since(began).Round(time.Millisecond), first, calls, last)
	for _, f := range []struct {
		what        string
		first, last int64
	}{{"RSS (KiB)", first.rssKiB, last.rssKiB}, {"goroutines", first.goroutines, last.goroutines}, {"open fds", first.fds, last.fds}} {
		if float64(f.last) > 1.1*float64(f.first) || float64(f.last) < 0.9*float64(f.first) {
			t.Errorf("%s: %d after 1000 calls, %d after %d: more than 10%% apart", f.what, f.first, f.last, calls)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	wedged := 0
	for _, n := range notices {
		if strings.Contains(n, "wedged") {
			wedged++
			if !strings.HasPrefix(n, "plugin tpwasm: ") {
				t.Errorf("a notice of a wedge of a plugin that answers: %s", n)
			}
		}
	}
	if wedged != spins {
		t.Errorf("%d wedge notices for %d calls that spun", wedged, spins)
	}
}

// soakFigures are what a long session must not grow.
type soakFigures struct{ rssKiB, goroutines, fds int64 }

func (f soakFigures) String() string {
	return fmt.Sprintf("RSS %d KiB, %d goroutines, %d open fds", f.rssKiB, f.goroutines, f.fds)
}

// settle measures the process once every plugin is running (warm runs a
// plain call on each) and what the calls before left behind has ended: a
// second's quiet, then a collection that returns what it can to the system.
func settle(t *testing.T, warm func()) soakFigures {
	t.Helper()
	warm()
	time.Sleep(time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	var f soakFigures
	f.goroutines = int64(runtime.NumGoroutine())
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	f.fds = int64(len(fds))
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return f
}

// soakUI is no one: nothing in the soak asks or needs approval.
type soakUI struct{}

func (soakUI) Progress(string, string) {}
func (soakUI) Ask(context.Context, string, string) (string, error) {
	return "", errors.New("no one to ask")
}
func (soakUI) Approve(context.Context, sdk.ToolCall, string) (bool, error) { return true, nil }
