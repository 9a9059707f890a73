package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// exitModule is a WASI command whose _start exits with code (under 64):
// modules of one size that a run tells apart.
func exitModule(code byte) []byte {
	return command([]byte{0}, [][]byte{fnBody(vec(), 0x41, code, 0x10, 0)})
}

// startRun is what one start of a module in a new Host, as a new process
// makes, did.
type startRun struct {
	exit     uint32
	reads    int32 // module files read and hashed
	unread   int32 // module files loaded by a kept sum
	compiles int32
}

// anHourAhead is a Host clock by which a file written just now had
// settled when read: its sum is kept.
func anHourAhead() time.Time { return time.Now().Add(time.Hour) }

// runNew starts each path in a new Host on cacheDir whose clock is now,
// one after the other, and waits for each to exit.
func runNew(t *testing.T, cacheDir string, now func() time.Time, paths ...string) (exits []uint32, run startRun) {
	t.Helper()
	h, err := NewHost(context.Background(), HostConfig{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, h, 30*time.Second)
	h.now = now
	for _, path := range paths {
		p := startModule(t, h, path)
		var exit *sys.ExitError
		if err := waitWithin(t, p.conn, 10*time.Second); !errors.As(err, &exit) {
			t.Fatalf("%s: Wait = %v", path, err)
		}
		exits = append(exits, exit.ExitCode())
	}
	return exits, startRun{reads: h.reads.Load(), unread: h.unread.Load(), compiles: h.compiles.Load()}
}

// runOne is runNew of one path, an hour ahead.
func runOne(t *testing.T, cacheDir, path string) startRun {
	t.Helper()
	exits, run := runNew(t, cacheDir, anHourAhead, path)
	run.exit = exits[0]
	return run
}

// records lists the sum records kept in cacheDir.
func records(t *testing.T, cacheDir string) []string {
	t.Helper()
	recs, err := filepath.Glob(filepath.Join(cacheDir, sumsCacheVersion, "[0-9a-f]*"))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// nextTick waits until a change to path can no longer share a timestamp
// with its last one. A change that could would leave the version as it
// was: what keeping only settled sums rules out (a real file is hashed two
// seconds or more after its last change; a test's clock runs ahead).
func nextTick(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(fileversion.Of(fi).Changed.Add(50 * time.Millisecond)))
}

// A new Host starting a module whose sum a Host kept neither reads nor
// hashes the file, and runs it from the metered module kept under the
// sum.
func TestKeptSumSkipsTheRead(t *testing.T) {
	cacheDir := t.TempDir()
	path := writeModule(t, "m.wasm", exitModule(15))
	if got := runOne(t, cacheDir, path); got != (startRun{exit: 15, reads: 1, unread: 0, compiles: 1}) {
		t.Fatalf("first start: %+v", got)
	}
	if recs := records(t, cacheDir); len(recs) != 1 {
		t.Fatalf("records kept: %v", recs)
	}
	if got := runOne(t, cacheDir, path); got != (startRun{exit: 15, reads: 0, unread: 1, compiles: 1}) {
		t.Fatalf("a new Host on the kept sum: %+v, want no read", got)
	}

	// Two paths with one content, both kept: one compilation, no reads.
	twin := writeModule(t, "twin.wasm", exitModule(15))
	runOne(t, cacheDir, twin)
	exits, run := runNew(t, cacheDir, anHourAhead, path, twin)
	if exits[0] != 15 || exits[1] != 15 || run.reads != 0 || run.unread != 2 || run.compiles != 1 {
		t.Fatalf("two kept paths of one content: exits %v, %+v", exits, run)
	}
}

// Only a sum of a settled version is kept: a file read within two seconds
// of its last change might change again without its timestamps changing.
// The clock is set at the rule's edge, as the read began.
func TestOnlySettledSumsAreKept(t *testing.T) {
	path := writeModule(t, "m.wasm", exitModule(15))
	changed := version(t, path).Changed
	for _, c := range []struct {
		after time.Duration
		kept  bool
	}{{fileversion.SettleTime - time.Millisecond, false}, {fileversion.SettleTime, true}} {
		cacheDir := t.TempDir()
		clock := func() time.Time { return changed.Add(c.after) }
		if exits, run := runNew(t, cacheDir, clock, path); exits[0] != 15 || run.reads != 1 {
			t.Fatalf("read %v after the last change: exit %v, %+v", c.after, exits, run)
		}
		if recs := records(t, cacheDir); (len(recs) == 1) != c.kept {
			t.Errorf("read %v after the last change: records %v, want kept %v", c.after, recs, c.kept)
		}
		want := int32(1)
		if c.kept {
			want = 0
		}
		if _, run := runNew(t, cacheDir, clock, path); run.reads != want {
			t.Errorf("read %v after the last change: the next Host read %d files, want %d", c.after, run.reads, want)
		}
	}
}

// A kept sum is believed only for the version it names: a file changed in
// any way, its modification time set back or not, is read again, and what
// runs is what the file now holds, never the code kept under the old sum.
func TestKeptSumIsOnlyForItsVersion(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, path, other string)
	}{{
		"rewritten in place, same size, mtime set back",
		func(t *testing.T, path, _ string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, exitModule(7), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		"replaced by a rename, same size, mtime set back",
		func(t *testing.T, path, _ string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tmp := path + ".new"
			if err := os.WriteFile(tmp, exitModule(7), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		"swapped by renames with another kept module",
		func(t *testing.T, path, other string) {
			tmp := path + ".swap"
			for _, mv := range [][2]string{{path, tmp}, {other, path}, {tmp, other}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					t.Fatal(err)
				}
			}
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			cacheDir := t.TempDir()
			path := writeModule(t, "m.wasm", exitModule(15))
			other := writeModule(t, "other.wasm", exitModule(7))
			runOne(t, cacheDir, path)
			runOne(t, cacheDir, other) // the code for exit 7 is kept too
			nextTick(t, path)
			nextTick(t, other)
			tt.change(t, path, other)
			if got := runOne(t, cacheDir, path); got.exit != 7 || got.reads != 1 {
				t.Fatalf("after the change: %+v, want exit 7 from a read", got)
			}
			// The new version's sum is kept in turn.
			if got := runOne(t, cacheDir, path); got.exit != 7 || got.reads != 0 {
				t.Fatalf("the changed file's second start: %+v, want exit 7 without a read", got)
			}
		})
	}
}

// A record that does not match in every byte costs a read and a hash,
// never the wrong code: here each edit points it at the sum of a module
// whose metered code is kept, and which exits 7, not 15.
func TestDamagedSumRecordIsNotBelieved(t *testing.T) {
	cacheDir := t.TempDir()
	path := writeModule(t, "m.wasm", exitModule(15))
	other := writeModule(t, "other.wasm", exitModule(7))
	runOne(t, cacheDir, path)
	runOne(t, cacheDir, other)
	file := sumRecord(t, cacheDir, path)
	good, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatal("no record for a settled file on this system")
	}
	if err != nil {
		t.Fatal(err)
	}
	otherRec, err := os.ReadFile(sumRecord(t, cacheDir, other))
	if err != nil {
		t.Fatal(err)
	}
	sum, otherSum := string(good[:64]), string(otherRec[:64])
	v := version(t, path).ID
	// sealed is a record with its checksum.
	sealed := func(body string) string { return string(diskrecord.Seal([]byte(body))) }

	// The sum alone edited, its checksum made to match, is believed: the
	// directory is the person's, as trusted as wazero's compiled code
	// beside it. That is what makes the edits below a test: each is caught
	// only by what it breaks.
	forged := sealed(otherSum + string(good[64:len(good)-4]))
	write := func(rec string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(forged)
	if got := runOne(t, cacheDir, path); got.exit != 7 || got.reads != 0 {
		t.Fatalf("a consistent record: %+v", got)
	}

	for _, tt := range []struct{ name, rec string }{
		{"the sum edited", strings.Replace(string(good), sum, otherSum, 1)},
		{"the checksum edited", string(good[:len(good)-1]) + string(good[len(good)-1]^1)},
		{"another path's record", string(otherRec)},
		{"another version's record", sealed(strings.Replace(forged[:len(forged)-4], v, v+"1", 1))},
		{"cut short", forged[:len(forged)-1]},
		{"empty", ""},
	} {
		write(tt.rec)
		if got := runOne(t, cacheDir, path); got.exit != 15 || got.reads != 1 {
			t.Errorf("%s: %+v, want exit 15 from a read", tt.name, got)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != string(good) {
			t.Errorf("%s: the record was not kept again: %q, %v", tt.name, b, err)
		}
	}
}

// A kept sum whose metered module is gone or damaged costs a read, and the
// module is metered and kept again.
func TestKeptSumWithoutItsMeteredModule(t *testing.T) {
	cacheDir := t.TempDir()
	path := writeModule(t, "m.wasm", exitModule(15))
	runOne(t, cacheDir, path)
	kept, err := filepath.Glob(filepath.Join(cacheDir, meterCacheVersion, "*.wasm"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept %v, %v", kept, err)
	}
	good, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(good)
	damaged[len(damaged)/2] ^= 0xFF
	for _, tt := range []struct {
		name  string
		spoil func() error
	}{
		{"removed", func() error { return os.Remove(kept[0]) }},
		{"damaged", func() error { return os.WriteFile(kept[0], damaged, 0o600) }},
	} {
		if err := tt.spoil(); err != nil {
			t.Fatal(err)
		}
		if got := runOne(t, cacheDir, path); got.exit != 15 || got.reads != 1 {
			t.Errorf("metered module %s: %+v, want exit 15 from a read", tt.name, got)
		}
		if b, err := os.ReadFile(kept[0]); err != nil || string(b) != string(good) {
			t.Errorf("metered module %s: not kept again (%v)", tt.name, err)
		}
	}
}

func version(t *testing.T, path string) fileversion.Version {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileversion.Of(fi)
}

// sumRecord is the file that keeps the sum of the module at path: named
// by the sha256 of its absolute path (fileversion.SumDir).
func sumRecord(t *testing.T, cacheDir, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	name := sha256.Sum256([]byte(abs))
	return filepath.Join(cacheDir, sumsCacheVersion, hex.EncodeToString(name[:]))
}
