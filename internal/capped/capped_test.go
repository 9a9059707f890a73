package capped

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadReadsARegularFileUpToItsCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, size := range []int{0, 1, 511, 512, 513, 5000} {
		want := strings.Repeat("x", size)
		if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := Read(path, 5000); err != nil || string(got) != want {
			t.Fatalf("%d bytes under a 5000 cap: %d bytes, %v", size, len(got), err)
		}
	}
	if _, err := Read(path, 4999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5000 bytes under a 4999 cap: %v, want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(link, 5000); err != nil || len(got) != 5000 {
		t.Fatalf("through a symlink: %d bytes, %v", len(got), err)
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want ErrNotExist", err)
	}
	var nr NotRegularError
	if _, err := Read(dir, 10); !errors.As(err, &nr) || !nr.Mode.IsDir() {
		t.Fatalf("a directory: %v, want NotRegularError", err)
	}
}
