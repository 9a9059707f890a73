package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// exitDelay runs bingo args in home (its HOME and working directory) and
// returns how long bingo took to exit after the last byte of its answer
// on stdout.
func exitDelay(tb testing.TB, home string, args ...string) time.Duration {
	tb.Helper()
	cmd := exec.Command(filepath.Join(binDir, "bingo"), args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var out []byte
	var last time.Time
	buf := make([]byte, 4096)
	for {
		n, err := stdout.Read(buf)
		if n > 0 {
			last = time.Now()
			out = append(out, buf[:n]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	err = cmd.Wait()
	took := time.Since(last)
	if err != nil || len(out) == 0 {
		tb.Fatalf("bingo %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.Bytes())
	}
	return took
}

// grantWrite writes the person's settings in home granting the plugin
// named name dir, writable (exec plugins are sandboxed): where a test's
// plugin leaves what the test waits for.
func grantWrite(tb testing.TB, home, name, dir string) {
	tb.Helper()
	file := filepath.Join(home, ".bingo", "settings.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"sandbox": {%q: {"write": [%q]}}}`, name, dir)), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// plugin writes a plugin directory named name under dir, holding
// plugin.json (manifest) and the files given, and returns it.
func plugin(tb testing.TB, dir, name, manifest string, files map[string]string) string {
	tb.Helper()
	root := filepath.Join(dir, name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	files["plugin.json"] = manifest
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// serverEverything is the entry of the npm package
// @modelcontextprotocol/server-everything, installed (npm install --prefix)
// in $BINGO_MCP_SERVERS or the checkout's .cache/mcp-servers; "" when it
// is in neither, or node is missing.
func serverEverything() string {
	if _, err := exec.LookPath("node"); err != nil {
		return ""
	}
	dir := os.Getenv("BINGO_MCP_SERVERS")
	if dir == "" {
		dir = filepath.Join(repo, ".cache", "mcp-servers")
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		return ""
	}
	return entry
}

// BenchmarkCallExit is how long a one-shot `bingo call` takes to exit
// after the last byte of its answer, the plugin's declaration cached:
// against the Python wordcount example, and against the Node MCP server
// server-everything (skipped when it is not installed; see
// serverEverything). The figure is the median. The floor is `bingo
// version`'s, which starts nothing: what exiting costs on the machine.
func BenchmarkCallExit(b *testing.B) {
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("one two three\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("floor", func(b *testing.B) {
		var ms []float64
		for b.Loop() {
			ms = append(ms, float64(exitDelay(b, home, "version").Microseconds())/1000)
		}
		b.ReportMetric(median(ms), "exit-ms")
	})
	for _, p := range []struct {
		name, tool, input string
		dir               func() string
	}{
		{"wordcount", "plugin__wordcount__count", `{"path":"notes.txt"}`, func() string { return filepath.Join(examples, "wordcount") }},
		{"everything", "plugin__everything__echo", `{"message":"hello"}`, func() string {
			entry := serverEverything()
			if entry == "" {
				b.Skip("server-everything is not installed: npm install --prefix .cache/mcp-servers @modelcontextprotocol/server-everything, or set BINGO_MCP_SERVERS")
			}
			manifest := fmt.Sprintf(`{"name": "everything", "version": "1", "entry": {"command": "node", "args": [%q, "stdio"], "protocol": "mcp"}}`, entry)
			return plugin(b, b.TempDir(), "everything", manifest, map[string]string{})
		}},
	} {
		b.Run(p.name, func(b *testing.B) {
			dir := p.dir()
			args := []string{"call", "--plugin-dir", dir, "--allow", p.tool, p.tool, p.input}
			exitDelay(b, home, args...) // caches the declaration
			var ms []float64
			for b.Loop() {
				ms = append(ms, float64(exitDelay(b, home, args...).Microseconds())/1000)
			}
			b.ReportMetric(median(ms), "exit-ms")
		})
	}
}

// lingerer answers its one tool, and at the end of its stdin takes its
// time (1.5 s, within the 2 s grace) before it writes argv[1] and exits.
const lingerer = `import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        tools = [{"name": "now", "description": "now", "inputSchema": {"type": "object"}}]
        result = {"protocol": 5, "name": "lingerer", "version": "1", "tools": tools}
    elif m.get("method") == "tool/call":
        result = {"output": {"parts": [{"type": "text", "text": "done"}]}}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}) + "\n")
    sys.stdout.flush()
time.sleep(1.5)
with open(sys.argv[1], "w") as f:
    f.write("stopped")
`

// A one-shot bingo call exits as soon as it has answered, without waiting
// for a plugin that takes its time to stop; the plugin still gets its
// grace: it is not killed for bingo's exit, and ends on its own.
func TestCallExitsSoonAfterItsAnswer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the shepherd, which finishes the stop, is Linux's")
	}
	t.Parallel()
	home := t.TempDir()
	stopped := filepath.Join(t.TempDir(), "stopped")
	grantWrite(t, home, "lingerer", filepath.Dir(stopped))
	manifest := fmt.Sprintf(`{"name": "lingerer", "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py", %q]}}`, stopped)
	plugin(t, filepath.Join(home, ".bingo", "plugins"), "lingerer", manifest, map[string]string{"main.py": lingerer})
	const bound = 250 * time.Millisecond // the plugin lingers 1.5 s
	var took []time.Duration
	for range 3 { // the best of three: the machine may be busy
		os.Remove(stopped)
		d := exitDelay(t, home, "call", "--allow", "plugin__lingerer__now", "plugin__lingerer__now")
		took = append(took, d)
		if d < bound {
			break
		}
	}
	if d := took[len(took)-1]; d >= bound {
		t.Fatalf("bingo exited %v after its answer (each try: %v), want under %v", d, took, bound)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, err := os.ReadFile(stopped); err == nil && string(data) == "stopped" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never finished its stop after bingo exited")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
