package wasm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// leb128 is v as an unsigned LEB128.
func leb128(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// echoWasm is a hand-assembled WASI command whose _start copies stdin to
// stdout until EOF, and whose type section declares extraTypes more
// function types than it uses. wazero compiles an entry preamble per
// declared type, and a module loaded from the disk cache is published to
// other callers before its preambles are done (wazero issue #2547): the
// many types hold that window open long enough for a concurrent load of
// the same module to find it, as a Go guest's do only now and then. It
// compiles in milliseconds, even under -race.
func echoWasm(extraTypes int) []byte {
	sec := func(id byte, body []byte) []byte {
		return append(append([]byte{id}, leb128(uint32(len(body)))...), body...)
	}
	name := func(s string) []byte { return append(leb128(uint32(len(s))), s...) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	// Types: 0 is () -> (), 1 is (i32 i32 i32 i32) -> i32, then extraTypes
	// distinct ones of six parameters, unused.
	types := cat(leb128(uint32(2+extraTypes)),
		[]byte{0x60, 0x00, 0x00},
		[]byte{0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f})
	for i := range extraTypes {
		t := []byte{0x60, 0x06}
		for j := range 6 {
			t = append(t, 0x7c+byte(i>>(2*j)&3)) // f64, f32, i64 or i32
		}
		types = append(types, append(t, 0x00)...)
	}
	imports := cat([]byte{0x02},
		name("wasi_snapshot_preview1"), name("fd_read"), []byte{0x00, 0x01}, // func 0
		name("wasi_snapshot_preview1"), name("fd_write"), []byte{0x00, 0x01}, // func 1
	)
	// Memory: the iovec {buf 64, len} at 0, nread at 8, nwritten at 12,
	// the buffer at 64.
	code := []byte{
		0x00,       // no locals
		0x02, 0x40, // block
		0x03, 0x40, //   loop
		0x41, 0x04, 0x41, 0x80, 0x20, 0x36, 0x02, 0x00, // iovec.len = 4096
		0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, // fd_read(0, iovec, 1, &nread)
		0x0d, 0x01, // an errno ends it
		0x41, 0x08, 0x28, 0x02, 0x00, 0x45, 0x0d, 0x01, // nread == 0 (EOF) ends it
		0x41, 0x04, 0x41, 0x08, 0x28, 0x02, 0x00, 0x36, 0x02, 0x00, // iovec.len = nread
		0x41, 0x01, 0x41, 0x00, 0x41, 0x01, 0x41, 0x0c, 0x10, 0x01, // fd_write(1, iovec, 1, &nwritten)
		0x0d, 0x01, // an errno ends it
		0x0c, 0x00, //   again
		0x0b, // end loop
		0x0b, // end block
		0x0b, // end
	}
	iovec := []byte{64, 0, 0, 0, 0, 0, 0, 0}
	return cat(
		[]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
		sec(1, types),
		sec(2, imports),
		sec(3, []byte{0x01, 0x00}),       // func 2 is of type 0
		sec(5, []byte{0x01, 0x00, 0x01}), // memory: min 1 page
		sec(7, cat([]byte{0x02}, name("_start"), []byte{0x00, 0x02}, name("memory"), []byte{0x02, 0x00})),
		sec(10, cat([]byte{0x01}, leb128(uint32(len(code))), code)),
		sec(11, cat([]byte{0x01, 0x00, 0x41, 0x00, 0x0b}, leb128(uint32(len(iovec))), iovec)),
	)
}

// copies writes bin to n paths in dirs of their own, as n installed
// plugins shipping the same module would have it.
func copies(t *testing.T, bin []byte, n int) []string {
	t.Helper()
	root := t.TempDir()
	paths := make([]string, n)
	for i := range paths {
		dir := filepath.Join(root, fmt.Sprintf("p%02d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		paths[i] = filepath.Join(dir, "plugin.wasm")
		if err := os.WriteFile(paths[i], bin, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// echoOnce starts tr, sends one line, checks it comes back and ends the
// instance.
func echoOnce(ctx context.Context, tr *Transport, line string) error {
	return answerOnce(ctx, tr, line, line)
}

// answerOnce starts tr, sends one line, checks the answer and ends the
// instance.
func answerOnce(ctx context.Context, tr *Transport, line, want string) error {
	c, err := tr.Start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		_ = c.Kill()
		_ = c.Wait()
	}()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != want+"\n" {
		return fmt.Errorf("answered %q, %v; want %q", got, err, want)
	}
	_ = c.Close()
	return c.Wait()
}

// Twenty plugins shipping the same module, each started several times at
// once, in new Hosts over a populated disk cache: what `bingo plugins`
// does with twenty identical wasm plugins installed. Compiling per path
// made twenty concurrent CompileModule calls of one module, and wazero
// publishes a module loaded from its disk cache to other callers before
// it is ready (wazero issue #2547): bingo crashed with "index out of
// range" in wazevo's NewFunction from conn.run. Compilation is keyed by
// content: one compile for all twenty, so no call ever sees another's
// unready module.
//
// The test runs on one P: a goroutine descheduled inside wazero's window
// is what lets another overtake it, and a second core only narrows the
// odds. Against the per-path code it crashes the test binary in the first
// round or two.
func TestIdenticalModulesCompileOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const plugins, startsEach, rounds = 20, 3, 5
	ctx := context.Background()
	paths := copies(t, echoWasm(4096), plugins)
	cache := filepath.Join(t.TempDir(), "cache")

	// Populate the disk cache, as an earlier session did.
	h, err := NewHost(ctx, HostConfig{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if err := echoOnce(ctx, h.Transport(Config{Path: paths[0], Name: "p00"}), "warm"); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, h, 30*time.Second)

	for round := range rounds {
		h, err := NewHost(ctx, HostConfig{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if round >= rounds-3 {
			// What this Host reads counts as settled, so its sums are kept
			// and the last two rounds load every file by its sum, without
			// reading it (sums.go): the other way into one compilation.
			h.now = anHourAhead
		}
		var wg sync.WaitGroup
		for i, path := range paths {
			tr := h.Transport(Config{Path: path, Name: fmt.Sprintf("p%02d", i)})
			for j := range startsEach {
				wg.Go(func() {
					if err := echoOnce(ctx, tr, fmt.Sprintf("%d-%d-%d", round, i, j)); err != nil {
						t.Errorf("round %d: %s: %v", round, path, err)
					}
				})
			}
		}
		wg.Wait()
		closeWithin(t, h, 30*time.Second)
		if n := h.compiles.Load(); n != 1 {
			t.Errorf("round %d: %d compilations for %d plugins with one module, want 1", round, n, plugins)
		}
		// Each file is loaded once: read, or by its kept sum, as the first
		// rounds may too if they come two seconds after the files were
		// written.
		r, u := h.reads.Load(), h.unread.Load()
		if r+u != plugins || round >= rounds-2 && u != plugins {
			t.Errorf("round %d: %d module files read and %d loaded by a kept sum for %d plugins started %d times each, want each loaded once (the last two rounds by a kept sum)", round, r, u, plugins, startsEach)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// A file is read once per version and compiled once per content: a
// respawn of an unchanged file only stats it, a file rewritten with the
// same bytes is read again but not compiled again, and new bytes are
// compiled.
func TestCompileKeyedByContent(t *testing.T) {
	ctx := context.Background()
	h := freshHost(t)
	a, b := echoWasm(0), echoWasm(1)
	path := writeModule(t, "plugin.wasm", a)
	tr := h.Transport(Config{Path: path, Name: "p"})
	step := func(what string, reads, compiles int32) {
		t.Helper()
		if err := echoOnce(ctx, tr, what); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r, c := h.reads.Load(), h.compiles.Load(); r != reads || c != compiles {
			t.Fatalf("%s: %d reads and %d compilations so far, want %d and %d", what, r, c, reads, compiles)
		}
	}
	// mtimes are set explicitly: a rewrite within the file system's
	// timestamp granularity would otherwise look unchanged.
	version := time.Now().Add(-time.Hour)
	rewrite := func(bin []byte) {
		t.Helper()
		version = version.Add(time.Second)
		if err := os.WriteFile(path, bin, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, version, version); err != nil {
			t.Fatal(err)
		}
	}

	step("first start", 1, 1)
	step("respawn", 1, 1)
	rewrite(a)
	step("same bytes, new mtime", 2, 1)
	rewrite(b)
	step("new bytes", 3, 2)
	rewrite(a)
	step("the first bytes again", 4, 2)
	step("respawn again", 4, 2)

	// Another plugin shipping the same bytes shares the compilation.
	other := h.Transport(Config{Path: writeModule(t, "other.wasm", b), Name: "other"})
	if err := echoOnce(ctx, other, "other"); err != nil {
		t.Fatal(err)
	}
	if c := h.compiles.Load(); c != 2 {
		t.Fatalf("%d compilations after a second plugin with known bytes, want 2", c)
	}
}

// Close cancels a compilation in progress and waits for it (it uses the
// runtime Close is about to close); the Start waiting for it returns
// ErrHostClosed.
func TestCloseCancelsACompilation(t *testing.T) {
	h := freshHost(t) // no disk cache: the probe compiles from scratch
	ch := goStart(context.Background(), h.Transport(Config{Path: probeWasm, Name: "probe"}))
	for deadline := time.Now().Add(time.Minute); h.compiles.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the compilation did not begin within a minute")
		}
	}
	begin := time.Now()
	closeWithin(t, h, 30*time.Second)
	t.Logf("Close returned %v into the compilation (a whole cold compile took %v)", time.Since(begin), coldStart)
	if r := awaitStart(t, h, ch, 30*time.Second); !errors.Is(r.err, ErrHostClosed) {
		t.Fatalf("Start = %v, want ErrHostClosed", r.err)
	}
}

// A compilation that failed is kept by the file version that failed, not
// by content: the failure may have been the disk cache's (a full disk), so
// another file with the same bytes compiles again.
func TestFailedCompileIsNotKeptByContent(t *testing.T) {
	ctx := context.Background()
	h := freshHost(t)
	bad := []byte("\x00asm\x01\x00\x00\x00\x99 not a section")
	a, b := writeModule(t, "a.wasm", bad), writeModule(t, "b.wasm", bad)
	for _, tt := range []struct {
		path     string
		compiles int32
	}{{a, 1}, {a, 1}, {b, 2}} {
		_, err := h.Transport(Config{Path: tt.path, Name: "bad"}).Start(ctx)
		if want := "wasm plugin bad: compile " + tt.path + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Start(%s) = %v, want an error starting %q", tt.path, err, want)
		}
		if n := h.compiles.Load(); n != tt.compiles {
			t.Fatalf("after starting %s: %d compilations, want %d", tt.path, n, tt.compiles)
		}
	}
}

// A Host that stays up sees a rewrite that keeps the file's size and
// sets its modification time back as the new version it is (on Linux,
// by its status-change time), and runs the new code, as a new Host
// would by its kept sums.
func TestRewriteKeepingSizeAndTimeIsANewVersion(t *testing.T) {
	if !fileversion.Of(mustStat(t, os.Args[0])).Strong {
		t.Skip("here a version is its size and modification time only")
	}
	exits := func(code byte) []byte {
		return command([]byte{0}, [][]byte{fnBody(vec(), 0x41, code, 0x10, 0)})
	}
	h := sharedHost
	path := writeModule(t, "m.wasm", exits(5))
	fi := mustStat(t, path)
	run := func() uint32 {
		p := startModule(t, h, path)
		return exitCode(t, waitWithin(t, p.conn, 10*time.Second))
	}
	if got := run(); got != 5 {
		t.Fatalf("first exit code %d, want 5", got)
	}
	if err := os.WriteFile(path, exits(6), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != 6 {
		t.Fatalf("after the rewrite, exit code %d, want 6: the old version ran", got)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
