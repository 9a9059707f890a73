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
	want, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "plugin.json")
	var stdout, stderr bytes.Buffer

	if code := run([]string{"-check", "-o", out}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "go run ./schema/gen") {
		t.Errorf("-check on a missing file: exit %d, stderr %q; want 1 and the command to fix it", code, stderr.String())
	}
	if code := run([]string{"-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the written file is not Generate's answer")
	}
	if code := run([]string{"-check", "-o", out}, &stdout, &stderr); code != 0 {
		t.Errorf("-check on a current file: exit %d", code)
	}
	if err := os.WriteFile(out, append(got, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"-check", "-o", out}, &stdout, &stderr); code != 1 {
		t.Errorf("-check on a stale file: exit %d, want 1", code)
	}
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unexpected argument: exit %d, want 2", code)
	}
}

// TestCommittedFileIsCurrent is the check CI runs: the default path is the
// module's schema/plugin.json, and it is current.
func TestCommittedFileIsCurrent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
