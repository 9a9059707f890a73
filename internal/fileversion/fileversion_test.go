package fileversion

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func stat(t *testing.T, path string) Version {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return Of(fi)
}

// On Linux no change of a file's contents leaves its ID as it was, even
// when the owner sets the modification time back to what it was: the ID
// holds the status-change time, which the change sets.
func TestEveryChangeIsANewVersion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux versions hold the status-change time")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(path, []byte("version one"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	first := stat(t, path)
	if !first.Strong || strings.Contains(first.ID, " ") {
		t.Fatalf("a Linux version %+v: want Strong and an ID without spaces", first)
	}
	if again := stat(t, path); again != first {
		t.Fatalf("an unchanged file: %+v, then %+v", first, again)
	}

	changes := []struct {
		what   string
		change func() error
	}{
		{"same size, other bytes, mtime set back", func() error {
			if err := os.WriteFile(path, []byte("version two"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(path, old, old)
		}},
		{"replaced by a copy of the same size, mtime set back", func() error {
			tmp := filepath.Join(dir, "tmp")
			if err := os.WriteFile(tmp, []byte("version 3!!"), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(tmp, old, old); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}},
		{"renamed away and back", func() error {
			moved := filepath.Join(dir, "moved")
			if err := os.Rename(path, moved); err != nil {
				return err
			}
			return os.Rename(moved, path)
		}},
		{"chmod", func() error { return os.Chmod(path, 0o600) }},
	}
	seen := map[string]string{first.ID: "the first version"}
	for _, c := range changes {
		// A change within the clock's tick of the one before may keep the
		// status-change time; the package's promise is for a settled
		// version. Let a tick pass.
		time.Sleep(time.Until(stat(t, path).Changed.Add(20 * time.Millisecond)))
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		v := stat(t, path)
		if prev, ok := seen[v.ID]; ok {
			t.Errorf("%s: the ID %s is that of %s", c.what, v.ID, prev)
		}
		if !v.Changed.After(old) {
			t.Errorf("%s: Changed is %v, the mtime set back", c.what, v.Changed)
		}
		seen[v.ID] = c.what
	}
}

// The rule's edge: settled from SettleTime after the last change on.
func TestSettled(t *testing.T) {
	changed := time.Now()
	v := Version{ID: "1:2", Changed: changed}
	if v.Settled(changed.Add(SettleTime - time.Nanosecond)) {
		t.Error("settled just before SettleTime")
	}
	if !v.Settled(changed.Add(SettleTime)) {
		t.Error("not settled at SettleTime")
	}
}

// A SumDir keeps only a settled sum of a strong version, and believes it
// only for the version it names, from the record as written.
func TestSumDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux versions are strong")
	}
	dir := t.TempDir()
	sums := SumDir(filepath.Join(dir, "sums"))
	path := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sums.Keep(SumOf(path, fi, sum, fi.ModTime()), fi) // read as it changed: not settled
	if _, ok := sums.Get(path, fi); ok {
		t.Fatal("a sum read before its version settled was kept")
	}
	sums.Keep(SumOf(path, fi, sum, time.Now().Add(time.Hour)), fi)
	if got, ok := sums.Get(path, fi); !ok || got.SHA256 != sum || !got.Matches(fi) {
		t.Fatalf("Get = %+v, %v", got, ok)
	}
	if _, ok := SumDir("").Get(path, fi); ok {
		t.Fatal("an empty SumDir holds a sum")
	}
	if err := os.WriteFile(path, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sums.Get(path, changed); ok {
		t.Fatal("a sum was believed of another version")
	}
}
