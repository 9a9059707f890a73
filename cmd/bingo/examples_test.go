package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesConform: every example under examples/plugins conforms as
// it lies, under its own directory's name (the name its manifest must
// carry), so that bingo plugins check and --plugin-dir work on it before
// it is installed anywhere. The examples that are built are checked with
// their build beside them.
func TestExamplesConform(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repo, "examples", "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(examples, name)
			home := t.TempDir()
			if err := linkWasmCache(home); err != nil {
				t.Fatal(err)
			}
			// Deadlines for a loaded machine: the check is of what the
			// examples answer, not of how fast this one is.
			settings := filepath.Join(home, ".bingo", "settings.json")
			if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(settings, []byte(`{"deadlines": {"initialize": "2m"}, "wasmCompile": {"time": "2m"}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			switch name {
			case "wordcount-mcp", "wordcount-mcp-wasm":
				buildMCP(t)
				dir = filepath.Join(map[string]string{"wordcount-mcp": mcpBuild.exec, "wordcount-mcp-wasm": mcpBuild.wasm}[name], name)
			case "wordcount-c":
				requireClang(t)
				if out, err := exec.Command("sh", filepath.Join(dir, "build.sh")).CombinedOutput(); err != nil {
					t.Fatalf("build.sh: %v\n%s", err, out)
				}
			case "wordcount-node":
				if _, err := exec.LookPath("node"); err != nil {
					t.Skip("node is not on PATH")
				}
			}
			cmd := exec.Command(filepath.Join(binDir, "bingo"), "plugins", "check", dir)
			cmd.Dir = home
			cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "\n"+name+" conforms\n") {
				t.Errorf("bingo plugins check %s: %v\n%s", dir, err, out)
			}
		})
	}
}
