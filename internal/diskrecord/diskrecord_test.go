package diskrecord

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
)

// TestReplace: the file is replaced whole, mode 0600, in a directory made
// for it, and nothing else is left in the directory.
func TestReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "rec")
	for _, data := range []string{"first", "second, longer", ""} {
		if err := Replace(path, []byte(data), Options{Sync: data == "first"}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v; want 0700", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want the record alone", len(entries))
	}
}

// TestReplaceStoppedBeforeRename: a write that stops before its rename (a
// crash) leaves the old file as it was, and the whole new one beside it
// under the temporary name.
func TestReplaceStoppedBeforeRename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	if err := Replace(path, []byte("old"), Options{}); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	var tmp string
	err := Replace(path, []byte("new"), Options{Temp: "rec.tmp-*", Sync: true, BeforeRename: func(f string) error { tmp = f; return crash }})
	if !errors.Is(err, crash) {
		t.Fatalf("Replace = %v, want the crash", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("the record reads %q after the crash", got)
	}
	if got, _ := os.ReadFile(tmp); string(got) != "new" || filepath.Dir(tmp) != filepath.Dir(path) || !bytes.HasPrefix([]byte(filepath.Base(tmp)), []byte("rec.tmp-")) {
		t.Fatalf("temporary file %s holds %q", tmp, got)
	}
}

// TestSealed: a sealed record reads back as written; one damaged,
// truncated or over the cap does not.
func TestSealed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec")
	data := []byte("what was kept")
	if err := Replace(path, Seal(data), Options{}); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSealed(path, int64(len(data))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadSealed = %q, %v", got, err)
	}
	if _, err := ReadSealed(path, int64(len(data))-1); !errors.Is(err, capped.ErrTooLarge) {
		t.Fatalf("over the cap: %v, want ErrTooLarge", err)
	}
	if _, err := ReadSealed(filepath.Join(dir, "none"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no record: %v, want ErrNotExist", err)
	}
	sealed := Seal(data)
	for name, rec := range map[string][]byte{
		"a byte changed":          append(append([]byte{}, sealed[:3]...), append([]byte{sealed[3] ^ 1}, sealed[4:]...)...),
		"cut short":               sealed[:len(sealed)-1],
		"shorter than a checksum": sealed[:3],
	} {
		if err := os.WriteFile(path, rec, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSealed(path, 100); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v, want ErrDamaged", name, err)
		}
	}
}
