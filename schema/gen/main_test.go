package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/schema"
)

func TestRunWritesAndChecks(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer

	if code := run([]string{"-check", "-dir", dir}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "go run ./schema/gen") {
		t.Errorf("-check on missing files: exit %d, stderr %q; want 1 and the command to fix it", code, stderr.String())
	}
	if code := run([]string{"-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, tc := range []struct {
		name     string
		generate func() ([]byte, error)
	}{{"plugin.json", schema.Generate}, {"settings.json", schema.GenerateSettings}} {
		want, err := tc.generate()
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, tc.name)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the written %s is not its generator's answer", tc.name)
		}
		if code := run([]string{"-check", "-dir", dir}, &stdout, &stderr); code != 0 {
			t.Errorf("-check on current files: exit %d", code)
		}
		if err := os.WriteFile(out, append(got, ' '), 0o644); err != nil {
			t.Fatal(err)
		}
		stderr.Reset()
		if code := run([]string{"-check", "-dir", dir}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.name) {
			t.Errorf("-check on a stale %s: exit %d, stderr %q; want 1 naming it", tc.name, code, stderr.String())
		}
		if err := os.WriteFile(out, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unexpected argument: exit %d, want 2", code)
	}
}

// TestCommittedFileIsCurrent is the check CI runs: the default paths are
// the module's schema/plugin.json and schema/settings.json, and both are
// current.
func TestCommittedFileIsCurrent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
