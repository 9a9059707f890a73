package wasm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// The C guest (testdata/cguest) calls WASI as a C program does, or
// directly with arguments no Go guest's runtime would pass: what a
// hostile module can do. The Rust guest (testdata/rustguest) reaches files
// through wasi-libc as C does. Guests are built once each, by clang with
// Debian's wasi-libc, or by Debian's rustc with its wasm32-wasi standard
// library (.ci/run installs them); without the compiler the tests that
// need them skip, except under CI, where they fail.
var cguests struct {
	mu    sync.Mutex
	built map[string]cguestBuild // by source
}

type cguestBuild struct {
	path string
	err  error
}

func cGuest(t testing.TB) string {
	t.Helper()
	return buildCGuest(t, "testdata/cguest/main.c")
}

// buildCGuest returns the WASI command built from the C or Rust source
// src, once per test binary.
func buildCGuest(t testing.TB, src string) string {
	t.Helper()
	cguests.mu.Lock()
	b, ok := cguests.built[src]
	if !ok {
		b = compileGuest(src)
		if cguests.built == nil {
			cguests.built = map[string]cguestBuild{}
		}
		cguests.built[src] = b
	}
	cguests.mu.Unlock()
	if b.err != nil {
		if _, noCompiler := b.err.(*exec.Error); noCompiler && os.Getenv("CI") == "" {
			t.Skipf("no guest compiler: %v (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32 rustc libstd-rust-dev-wasm32)", b.err)
		}
		t.Fatalf("building the guest %s: %v", src, b.err)
	}
	return b.path
}

// compileGuest builds src by its extension: .rs with Debian's rustc (by
// its path: a rustup one earlier on PATH may lack the wasm32-wasi
// target), anything else with clang.
func compileGuest(src string) cguestBuild {
	name := filepath.Base(filepath.Dir(src))
	out := filepath.Join(testTmp, name+".wasm")
	var cmd *exec.Cmd
	if filepath.Ext(src) == ".rs" {
		if _, err := os.Stat("/usr/bin/rustc"); err != nil {
			return cguestBuild{err: &exec.Error{Name: "/usr/bin/rustc", Err: err}}
		}
		cmd = exec.Command("/usr/bin/rustc", "--target", "wasm32-wasi", "-O", "-C", "strip=debuginfo", "-o", out, src)
	} else {
		clang, err := exec.LookPath("clang")
		if err != nil {
			return cguestBuild{err: err}
		}
		cmd = exec.Command(clang, "--target=wasm32-wasi", "--sysroot=/usr", "-O1", "-o", out, src)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return cguestBuild{err: &buildError{name: name, out: string(b), err: err}}
	}
	return cguestBuild{path: out}
}

// startC starts the C guest with cfg, as startProbe does the Go probe.
func startC(t testing.TB, h *Host, cfg Config) *probe {
	t.Helper()
	cfg.Path = cGuest(t)
	if cfg.Name == "" {
		cfg.Name = "cguest"
	}
	return startProbe(t, h, cfg)
}

// Every call that takes a path refuses one over maxPath before the mount
// sees it, and passes one of maxPath bytes on.
func TestCappedFSRefusesLongPaths(t *testing.T) {
	c := cappedFS{experimentalsys.UnimplementedFS{}}
	calls := func(p string) map[string]experimentalsys.Errno {
		_, open := c.OpenFile(p, experimentalsys.O_RDONLY, 0)
		_, lstat := c.Lstat(p)
		_, stat := c.Stat(p)
		_, readlink := c.Readlink(p)
		return map[string]experimentalsys.Errno{
			"open": open, "lstat": lstat, "stat": stat, "readlink": readlink,
			"mkdir": c.Mkdir(p, 0o700), "chmod": c.Chmod(p, 0o700),
			"rename from": c.Rename(p, "x"), "rename to": c.Rename("x", p),
			"rmdir": c.Rmdir(p), "unlink": c.Unlink(p),
			"link from": c.Link(p, "x"), "link to": c.Link("x", p),
			"symlink target": c.Symlink(p, "x"), "symlink": c.Symlink("x", p),
			"utimens": c.Utimens(p, 0, 0),
		}
	}
	for call, e := range calls(strings.Repeat("a", maxPath+1)) {
		if e != experimentalsys.ENAMETOOLONG {
			t.Errorf("%s of a %d-byte path: %v, want ENAMETOOLONG", call, maxPath+1, e)
		}
	}
	for call, e := range calls(strings.Repeat("a", maxPath)) {
		if e != experimentalsys.ENOSYS {
			t.Errorf("%s of a %d-byte path: %v, want it passed on (ENOSYS)", call, maxPath, e)
		}
	}
}

// longPathChildEnv makes the test binary a child whose whole life is one
// C guest asking path_open of a 64 MiB path: its peak memory is then that
// call's, and the parent reads it from the child's rusage.
const (
	longPathChildEnv = "BINGO_WASM_LONGPATH_CHILD"
	longPathDirEnv   = "BINGO_WASM_LONGPATH_DIR"
	longPath         = 64 << 20
)

// longPathChild runs the C guest over a mount of the directory in
// longPathDirEnv, has it make a longPath-byte path and path_open it, and
// prints the answer and how long the call took (ns), a line each.
func longPathChild(guest string) int {
	dir := os.Getenv(longPathDirEnv)
	ctx := context.Background()
	h, err := NewHost(ctx, HostConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer h.Close(ctx)
	c, err := h.Transport(Config{Path: guest, Name: "cguest", Dir: dir}).Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Kill(); _ = c.Wait() }()
	r := bufio.NewReader(c)
	ask := func(cmd string) (string, time.Duration, error) {
		start := time.Now()
		if _, err := fmt.Fprintln(c, cmd); err != nil {
			return "", 0, err
		}
		line, err := r.ReadString('\n')
		return strings.TrimSpace(line), time.Since(start), err
	}
	// The guest makes the path first: what is timed is the call alone.
	answer, took, err := ask(fmt.Sprintf("mkpath %d", longPath))
	if err == nil {
		answer, took, err = ask("openpath " + dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s\n%d\n", answer, took)
	return 0
}
