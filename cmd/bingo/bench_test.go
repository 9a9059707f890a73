package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// namedPlugin is the smallest honest plugin: it answers the handshake under
// the name its manifest gives it, and exits when stdin ends.
const namedPlugin = `import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocol": 5, "name": sys.argv[1], "version": "1",
              "tools": [{"name": "t", "description": "t", "inputSchema": {"type": "object"}}]}}), flush=True)
`

// BenchmarkStartup times a whole `bingo plugins` run — start every plugin,
// handshake, list, stop — with 0, 1 and 16 Python plugins installed. Plugins
// start in parallel, so plugins=16 over plugins=1 is far below 16 (on 2
// cores the interpreters' own start-up still competes for CPU).
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{0, 1, 16} {
		b.Run(fmt.Sprintf("plugins=%d", n), func(b *testing.B) {
			home := b.TempDir()
			plugins := filepath.Join(home, ".bingo", "plugins")
			if err := os.MkdirAll(plugins, 0o755); err != nil {
				b.Fatal(err)
			}
			script := filepath.Join(plugins, "named.py")
			if err := os.WriteFile(script, []byte(namedPlugin), 0o644); err != nil {
				b.Fatal(err)
			}
			python := interpreter(b)
			for i := range n {
				name := fmt.Sprintf("p%02d", i)
				dir := filepath.Join(plugins, name)
				manifest := fmt.Sprintf(`{"name": %q, "version": "1", "entry": {"command": %q, "args": [%q, %q]}}`, name, python, script, name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "plugin.json"), []byte(manifest), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				cmd := exec.Command(filepath.Join(binDir, "bingo"), "plugins")
				cmd.Env = append(os.Environ(), "HOME="+home)
				cmd.Dir = home
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				if n > 0 && !containsAll(string(out), "running", n) {
					b.Fatalf("not every plugin started:\n%s", out)
				}
			}
		})
	}
}

// BenchmarkStartupFloor is the baseline for BenchmarkStartup/plugins=16:
// the same 16 interpreters started at once and importing json, with no
// bingo at all. On 2 cores their start-up is most of the cost.
func BenchmarkStartupFloor(b *testing.B) {
	python := interpreter(b)
	for range b.N {
		cmds := make([]*exec.Cmd, 16)
		for i := range cmds {
			cmds[i] = exec.Command(python, "-c", "import json, sys")
			if err := cmds[i].Start(); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range cmds {
			if err := c.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// interpreter is python3's real executable. A version manager's shim (pyenv
// here) is a shell script costing ~0.8 s of CPU per start, which would
// measure the shim, not bingo.
func interpreter(b *testing.B) string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func containsAll(s, sub string, n int) bool { return strings.Count(s, sub) == n }
