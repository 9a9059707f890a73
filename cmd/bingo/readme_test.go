package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFirstSession runs the README's "A first session" block as a
// person would paste it: from a checkout (here, one holding the built
// binary and the examples), with an empty HOME, no provider configured
// until the block configures one. Every command must succeed and the turn
// must end with the model's answer from the tool.
func TestReadmeFirstSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts python3 plugins")
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "## A first session")
	if i < 0 {
		t.Fatal(`README.md has no "## A first session"`)
	}
	block := text[i:]
	start := strings.Index(block, "```sh\n")
	end := strings.Index(block[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal(`README.md's first session has no sh block`)
	}
	script := block[start+6 : start+6+end]

	checkout := t.TempDir()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(checkout, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binDir, filepath.Join(checkout, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(checkout, "examples", "plugins")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = checkout
	cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's first session failed (%v):\n%s\n--- the block:\n%s", err, out, script)
	}
	for _, want := range []string{"│ notes.txt │", "notes.txt has 9 words"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the first session's output lacks %q:\n%s", want, out)
		}
	}
}
