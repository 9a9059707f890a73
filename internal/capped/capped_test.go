package capped

import (
	"errors"
	"io"
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

// endless is a file that keeps growing: it counts what is read of it.
type endless struct{ n int64 }

func (r *endless) Read(p []byte) (int, error) {
	clear(p)
	r.n += int64(len(p))
	return len(p), nil
}

// A file that grows after it was looked at is read no further than one
// byte past the cap, whatever size the look saw; one that ends at the cap
// is read whole.
func TestFillStopsOneBytePastTheCap(t *testing.T) {
	const max = 100000
	for _, size := range []int64{0, 10, max} {
		r := &endless{}
		if _, err := fill("f", size, max, r.Read); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("an endless file seen at %d bytes: %v, want ErrTooLarge", size, err)
		}
		if r.n > max+1 {
			t.Errorf("an endless file seen at %d bytes: read %d bytes under a cap of %d", size, r.n, max)
		}
		data, err := fill("f", size, max, io.LimitReader(&endless{}, max).Read)
		if err != nil || len(data) != max {
			t.Errorf("a file of the cap's size, seen at %d bytes: %d bytes, %v", size, len(data), err)
		}
	}
}

func TestReadAsSaysRefusalsInTheCallersWords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	big, odd := errors.New("too big for us"), errors.New("not ours to read")
	if _, err := ReadAs(path, 4, big, odd); err != big {
		t.Fatalf("over the cap: %v, want %v", err, big)
	}
	if _, err := ReadAs(dir, 4, big, odd); err != odd {
		t.Fatalf("a directory: %v, want %v", err, odd)
	}
	var nr NotRegularError
	if _, err := ReadAs(dir, 4, big, nil); !errors.As(err, &nr) {
		t.Fatalf("a directory, no words of the caller's: %v, want a NotRegularError", err)
	}
	_, err := ReadAs(filepath.Join(dir, "missing"), 4, big, odd)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if bare := Bare(err); strings.Contains(bare.Error(), dir) || !errors.Is(bare, fs.ErrNotExist) {
		t.Fatalf("Bare(%v) = %v, want the reason without the path", err, bare)
	}
	if other := errors.New("x"); Bare(other) != other {
		t.Fatal("Bare changed an error that names no path")
	}
}
