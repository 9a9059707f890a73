package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// startCounter is a Python plugin that appends a line to $MARKER each time
// it starts, and declares the tools listed in the file $TOOLS (outside its
// directory and named by nothing in its manifest, so the declaration cache
// cannot see it change). Each tool answers its own name.
const startCounter = `import json, os, sys
open(os.environ["MARKER"], "a").write("start\n")
names = open(os.environ["TOOLS"]).read().split()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        tools = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in names]
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocol": 5, "name": "counter", "version": "1", "tools": tools}}), flush=True)
    elif m.get("method") == "tool/call":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"output": {"parts": [{"type": "text", "text": m["params"]["name"]}]}}}), flush=True)
`

type lazyRig struct {
	t                 *testing.T
	home, dir, marker string
	tools             string // the file listing the tools it declares
}

func newLazyRig(t *testing.T) *lazyRig {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("no python3")
	}
	files := t.TempDir()
	r := &lazyRig{t: t, home: t.TempDir(), marker: filepath.Join(files, "starts"), tools: filepath.Join(files, "tools.txt")}
	r.dir = filepath.Join(r.home, ".bingo", "plugins", "counter")
	r.settings("")
	r.write("plugin.json", `{"name": "counter", "version": "1", "entry": {"command": "`+strings.TrimSpace(string(out))+`", "args": ["${PLUGIN_ROOT}/main.py"]}}`)
	r.write("main.py", startCounter)
	r.setTools("one")
	return r
}

func (r *lazyRig) write(name, data string) {
	r.t.Helper()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(data), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// settings writes the person's settings: more (keys, JSON) beside the
// grant that lets the plugin write its marker and read its tools (an exec
// plugin is sandboxed).
func (r *lazyRig) settings(more string) {
	r.t.Helper()
	grant := `"sandbox": {"counter": {"write": ["` + filepath.Dir(r.marker) + `"]}}`
	if more != "" {
		grant += ", " + more
	}
	if err := os.MkdirAll(filepath.Join(r.home, ".bingo"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".bingo", "settings.json"), []byte("{"+grant+"}"), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *lazyRig) setTools(names string) {
	r.t.Helper()
	if err := os.WriteFile(r.tools, []byte(names), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *lazyRig) open() (*Host, noticeLog) {
	r.t.Helper()
	n := newNoticeLog()
	h, err := Open(context.Background(), Config{Home: r.home, Cwd: r.home, Notify: n.Add,
		Environ: []string{"MARKER=" + r.marker, "TOOLS=" + r.tools, "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { h.Close() })
	return h, n
}

func (r *lazyRig) starts() int {
	b, _ := os.ReadFile(r.marker)
	return strings.Count(string(b), "start")
}

func status(h *Host, name string) string {
	for _, p := range h.Plugins() {
		if p.Name == name {
			return p.Status
		}
	}
	return "missing"
}

func TestACachedPluginStartsOnFirstUse(t *testing.T) {
	r := newLazyRig(t)
	h, _ := r.open()
	if r.starts() != 1 || status(h, "counter") != "running" {
		t.Fatalf("first run: %d starts, %s; want it started and cached", r.starts(), status(h, "counter"))
	}
	h.Close()

	h, n := r.open()
	if r.starts() != 1 || status(h, "counter") != "idle" {
		t.Fatalf("second run: %d starts, %s; want none and idle", r.starts(), status(h, "counter"))
	}
	if got := h.Plugins()[0].Contributes; len(got) != 1 || got[0] != "tool plugin__counter__one" {
		t.Fatalf("an idle plugin contributes what it declared: %v", got)
	}
	out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__counter__one"}, 0, &fakeUI{approve: true})
	if err != nil || out.Text() != "one" {
		t.Fatalf("the first use: %v %+v", err, out)
	}
	if r.starts() != 2 || status(h, "counter") != "running" {
		t.Fatalf("after the first use: %d starts, %s", r.starts(), status(h, "counter"))
	}
	if n.text() != "" {
		t.Fatalf("notices: %s", n.text())
	}
}

func TestAChangedDeclarationReplacesTheCachedContributions(t *testing.T) {
	r := newLazyRig(t)
	h, _ := r.open()
	h.Close()
	r.setTools("two")
	h, n := r.open()
	if _, ok := h.Registry().Tool("plugin__counter__one"); !ok || r.starts() != 1 {
		t.Fatalf("the cached declaration (the key cannot see $TOOLS) was not offered")
	}
	// The stale tool's proxy starts the plugin, which no longer has it.
	h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__counter__one"}, 0, &fakeUI{approve: true})
	if _, ok := h.Registry().Tool("plugin__counter__one"); ok {
		t.Fatal("the tool the plugin no longer declares is still offered")
	}
	out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__counter__two"}, 0, &fakeUI{approve: true})
	if err != nil || out.Text() != "two" {
		t.Fatalf("the newly declared tool: %v %+v", err, out)
	}
	if got := strings.Count(n.text(), "declaration changed"); got != 1 {
		t.Fatalf("want one notice of the change, got: %s", n.text())
	}
	h.Close()
	// The cache holds the new declaration now.
	h, _ = r.open()
	if _, ok := h.Registry().Tool("plugin__counter__two"); !ok || r.starts() != 2 || status(h, "counter") != "idle" {
		t.Fatalf("third run: %d starts, %s", r.starts(), status(h, "counter"))
	}
}

func TestAChangedScriptOrConfigIsStartedAgain(t *testing.T) {
	r := newLazyRig(t)
	h, _ := r.open()
	h.Close()
	r.write("main.py", startCounter+"# changed\n")
	h, _ = r.open()
	if r.starts() != 2 {
		t.Fatalf("a changed script: %d starts, want 2", r.starts())
	}
	h.Close()
	r.settings(`"plugins": {"counter": {"x": 1}}`)
	r.open()
	if r.starts() != 3 {
		t.Fatalf("a changed config: %d starts, want 3", r.starts())
	}
}

func TestACorruptCacheIsAMissAndALogLine(t *testing.T) {
	r := newLazyRig(t)
	h, _ := r.open()
	h.Close()
	cache := filepath.Join(r.home, ".bingo", "data", "cache", "declarations", "counter.json")
	if err := os.WriteFile(cache, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, n := r.open()
	if r.starts() != 2 || status(h, "counter") != "running" || n.text() != "" {
		t.Fatalf("a corrupt cache: %d starts, %s, notices %q", r.starts(), status(h, "counter"), n.text())
	}
	h.Close()
	log, _ := os.ReadFile(filepath.Join(r.home, ".bingo", "data", "logs", "plugin-counter.log"))
	if !strings.Contains(string(log), "starting the plugin instead") {
		t.Fatalf("the log does not say why:\n%s", log)
	}
	h, _ = r.open()
	if r.starts() != 2 {
		t.Fatal("the start after a corrupt cache did not rewrite it")
	}
	h.Close()

	// A well-formed file whose declaration is not: its line no longer
	// matches its checksum, so it is refused.
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if before, _, ok := strings.Cut(l, "\t"); ok {
			lines[i] = before + "\t{garbage\n"
		}
	}
	if err := os.WriteFile(cache, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	h, n = r.open()
	if r.starts() != 3 || status(h, "counter") != "running" || n.text() != "" {
		t.Fatalf("a corrupt declaration: %d starts, %s, notices %q", r.starts(), status(h, "counter"), n.text())
	}
	h.Close()
	log, _ = os.ReadFile(filepath.Join(r.home, ".bingo", "data", "logs", "plugin-counter.log"))
	if got := strings.Count(string(log), "starting the plugin instead"); got != 2 {
		t.Fatalf("the log says why %d times, want 2:\n%s", got, log)
	}
}

// An uninstalled plugin's cached declaration goes with it: the next run,
// not finding it, sees its files are gone and removes its cache file.
func TestAnUninstalledPluginsCacheIsRemoved(t *testing.T) {
	r := newLazyRig(t)
	// Only a file unchanged for a while has its sum kept beside the entry
	// (trust.FileSum.Settled, 2s), and those sums say where the plugin was.
	time.Sleep(2500 * time.Millisecond)
	h, _ := r.open()
	h.Close()
	cache := filepath.Join(r.home, ".bingo", "data", "cache", "declarations", "counter.json")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("not cached: %v", err)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	// Prunes are a day apart (declcache.PruneIfDue): if the first open
	// made the cache's directory in time to stamp its prune, that was a
	// day ago.
	stamp := filepath.Join(filepath.Dir(cache), ".pruned")
	dayAgo := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(stamp, dayAgo, dayAgo); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	h, n := r.open()
	h.Close()
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("the cache of an uninstalled plugin is still there (%v)", err)
	}
	if n.text() != "" {
		t.Fatalf("notices: %s", n.text())
	}
}

// A log that cannot be written costs a plugin its log, not its run: it is
// started as ever, and the person is told once why its log is empty.
func TestAnUnwritableLogIsANoticeNotAFailure(t *testing.T) {
	r := newLazyRig(t)
	logs := filepath.Join(r.home, ".bingo", "data", "logs")
	if err := os.MkdirAll(filepath.Dir(logs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logs, nil, 0o644); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	n := newNoticeLog()
	h, err := Open(context.Background(), Config{Home: r.home, Cwd: r.home, Notify: n.Add, Trace: true,
		Environ: []string{"MARKER=" + r.marker, "TOOLS=" + r.tools, "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if status(h, "counter") != "running" {
		t.Fatalf("status %s; want running", status(h, "counter"))
	}
	if got := strings.Count(n.text(), "its log cannot be written"); got != 1 {
		t.Fatalf("told %d times, want once:\n%s", got, n.text())
	}
}

// deadlines.idleStop stops a running plugin left with nothing to do, and
// the next use starts it again; "0" never stops it.
func TestIdleStopZeroNeverStops(t *testing.T) {
	r := newLazyRig(t)
	setIdleStop := func(v string) {
		t.Helper()
		r.settings(`"deadlines": {"idleStop": "` + v + `"}`)
	}
	call := func(h *Host) {
		t.Helper()
		if out, err := h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__counter__one"}, 0, &fakeUI{approve: true}); err != nil || out.Text() != "one" {
			t.Fatalf("call: %v %+v", err, out)
		}
	}

	setIdleStop("200ms")
	h, n := r.open() // the first run starts it, to cache its declaration
	call(h)
	for deadline := time.Now().Add(10 * time.Second); status(h, "counter") != "idle"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("idleStop 200ms: still %s after 10s with nothing to do", status(h, "counter"))
		}
	}
	call(h) // the next use starts it again
	if r.starts() != 2 || n.text() != "" {
		t.Fatalf("idleStop 200ms: %d starts, notices %q", r.starts(), n.text())
	}
	h.Close()

	setIdleStop("0")
	h, n = r.open()
	if got := h.Settings().Deadlines.IdleStop; got != settings.Never || n.text() != "" {
		t.Fatalf(`idleStop "0": %v in force, notices %q; want never`, got, n.text())
	}
	call(h)
	time.Sleep(1500 * time.Millisecond) // over seven times the 200ms that stopped it above
	if status(h, "counter") != "running" || r.starts() != 3 {
		t.Fatalf(`idleStop "0": %s after 1.5s with nothing to do, %d starts; want running`, status(h, "counter"), r.starts())
	}
}

// A plugin's data directory is made by its start, not by a run that only
// offers it from the cache; one that cannot be made fails the start, with
// why.
func TestTheDataDirectoryIsMadeByTheStart(t *testing.T) {
	r := newLazyRig(t)
	h, _ := r.open() // the first run starts it, to cache its declaration
	h.Close()
	dataDir := filepath.Join(r.home, ".bingo", "data", "plugins", "counter")
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	h, _ = r.open()
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) || status(h, "counter") != "idle" {
		t.Fatalf("a run that starts nothing: %s, data directory %v; want idle and none made", status(h, "counter"), err)
	}
	call := func() (sdk.ToolOutput, error) {
		return h.CallTool(context.Background(), sdk.ToolCallRequest{Name: "plugin__counter__one"}, 0, &fakeUI{approve: true})
	}
	if out, err := call(); err != nil || out.Text() != "one" {
		t.Fatalf("the first use: %v %+v", err, out)
	}
	if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("after the start: %v %v; want a 0700 directory", fi, err)
	}
	h.Close()

	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataDir, nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	h, _ = r.open()
	if out, err := call(); err == nil || !out.IsError || !strings.Contains(err.Error(), "cannot create its data directory") {
		t.Fatalf("a data directory that cannot be made: %v %+v; want the start to fail with why", err, out)
	}
	if r.starts() != 2 {
		t.Fatalf("%d starts; the last one should not have run the plugin", r.starts())
	}
}
