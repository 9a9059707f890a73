package wasm

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
)

// sandboxDirs makes <tmp>/outer/outside.txt and the session dir
// <tmp>/outer/session holding inside.txt, a link to inside.txt, and links
// (relative and absolute) to outside.txt.
func sandboxDirs(t *testing.T) (session, outside string) {
	t.Helper()
	outer := filepath.Join(t.TempDir(), "outer")
	session = filepath.Join(outer, "session")
	outside = filepath.Join(outer, "outside.txt")
	if err := os.MkdirAll(session, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, data string }{
		{outside, "secret outside"},
		{filepath.Join(session, "inside.txt"), "inside"},
	} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"in-link":      "inside.txt",
		"out-link":     "../outside.txt",
		"out-link-abs": outside,
	} {
		if err := os.Symlink(target, filepath.Join(session, link)); err != nil {
			t.Fatal(err)
		}
	}
	return session, outside
}

func TestSandboxFiles(t *testing.T) {
	session, outside := sandboxDirs(t)
	p := startProbe(t, sharedHost, Config{Dir: session})

	if got := p.ask("cwd"); got != filepath.ToSlash(session) {
		t.Errorf("guest cwd = %q, want the session dir %q", got, session)
	}
	allowed := []string{
		filepath.Join(session, "inside.txt"),
		"inside.txt", // relative to the working directory
		filepath.Join(session, "in-link"),
	}
	for _, path := range allowed {
		if got := p.ask("read " + path); got != `ok "inside"` {
			t.Errorf("read %s = %s, want the file", path, got)
		}
	}
	refused := []string{
		"/etc/passwd",
		session + "/../outside.txt",
		"../outside.txt",
		outside,
		filepath.Join(session, "out-link"),
		filepath.Join(session, "out-link-abs"),
	}
	for _, path := range refused {
		if got := p.ask("read " + path); !strings.HasPrefix(got, "err ") {
			t.Errorf("read %s = %s, want an error", path, got)
		}
	}
	// A FIFO in Dir must not park the host: the open is refused at once.
	fifo := filepath.Join(session, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.ask("read " + fifo); !strings.HasPrefix(got, "err ") {
		t.Errorf("read a FIFO = %s, want an error", got)
	}
	newFile := filepath.Join(session, "new.txt")
	if got := p.ask("write " + newFile); !strings.HasPrefix(got, "err ") {
		t.Errorf("write into a read-only Dir = %s, want an error", got)
	}
	if got := p.ask("write " + filepath.Join(session, "inside.txt")); !strings.HasPrefix(got, "err ") {
		t.Errorf("overwrite in a read-only Dir = %s, want an error", got)
	}
	if _, err := os.Stat(newFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the host sees %s after a refused write: %v", newFile, err)
	}
}

func TestSandboxWritable(t *testing.T) {
	session, outside := sandboxDirs(t)
	p := startProbe(t, sharedHost, Config{Dir: session, Writable: true})

	// A FIFO in Dir must not park the host: the open is refused at once.
	fifo := filepath.Join(session, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.ask("read " + fifo); !strings.HasPrefix(got, "err ") {
		t.Errorf("read a FIFO = %s, want an error", got)
	}
	newFile := filepath.Join(session, "new.txt")
	if got := p.ask("write " + newFile); got != "ok" {
		t.Fatalf("write with Writable = %s", got)
	}
	if b, err := os.ReadFile(newFile); err != nil || string(b) != "written" {
		t.Fatalf("host reads %q, %v; want the guest's write", b, err)
	}
	// Writable widens Dir, nothing else.
	for _, path := range []string{outside, filepath.Join(session, "out-link"), "/tmp/wasm-sandbox-escape"} {
		if got := p.ask("write " + path); !strings.HasPrefix(got, "err ") {
			t.Errorf("write %s = %s, want an error", path, got)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret outside" {
		t.Errorf("the file outside Dir changed: %q", b)
	}
}

func TestSandboxEnv(t *testing.T) {
	t.Setenv("BINGO_WASM_HOST_SECRET", "must-not-leak")
	p := startProbe(t, sharedHost, Config{Env: map[string]string{"B": "2", "A": "one=1"}})
	if got, want := p.ask("env"), `"A=one=1" "B=2"`; got != want {
		t.Fatalf("guest environment = %s, want exactly Config.Env %s", got, want)
	}
}

func TestSandboxNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	p := startProbe(t, sharedHost, Config{})
	if got := p.ask("dial " + ln.Addr().String()); !strings.HasPrefix(got, "err ") {
		t.Fatalf("dial from the guest = %s, want an error", got)
	}
	ln.Close()
	select {
	case <-accepted:
		t.Fatal("the host's listener accepted a connection from the guest")
	default:
	}
}

func TestSandboxMemoryCap(t *testing.T) {
	var log testutil.SyncBuffer
	tr := sharedHost.Transport(Config{Path: probeWasm, Name: "hog", MemoryLimitMiB: 16, Stderr: &log})
	c, err := tr.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("alloc\n")); err != nil {
		t.Fatal(err)
	}
	err = waitWithin(t, c, 20*time.Second)
	var exit *sys.ExitError
	if !errors.Is(err, ErrMemoryLimit) || !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("Wait = %v, want the memory limit and exit code 2", err)
	}
	if !strings.Contains(err.Error(), "wasm plugin hog: memory limit of 16 MiB reached") {
		t.Errorf("Wait = %q, want a plain reason", err)
	}
	if !strings.Contains(log.String(), "out of memory") {
		t.Errorf("the guest's stderr does not say out of memory: %q", log.String())
	}
	// The host survived, and so does the transport.
	p := startProbe(t, sharedHost, Config{Name: "hog", MemoryLimitMiB: 16})
	if got := p.ask("echo alive"); got != "alive" {
		t.Fatalf("after the death: %q", got)
	}
}

func TestSandboxClockAndRandom(t *testing.T) {
	a := startProbe(t, sharedHost, Config{})
	b := startProbe(t, sharedHost, Config{})

	ns, err := strconv.ParseInt(a.ask("time"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if skew := time.Since(time.Unix(0, ns)).Abs(); skew > time.Minute {
		t.Errorf("guest wall clock is %v away from the host's", skew)
	}
	slept, err := strconv.ParseInt(a.ask("sleep"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(slept) < 10*time.Millisecond {
		t.Errorf("a 10ms sleep measured %v inside: the monotonic clock or sleep is fake", time.Duration(slept))
	}

	ra, rb := a.ask("rand"), b.ask("rand")
	if len(ra) != 32 || ra == rb {
		t.Errorf("two instances drew %q and %q: want 16 random bytes each, different", ra, rb)
	}
}

// A relative path means the working directory (Config.Dir) in C and Rust
// as in Go, though wasi-libc, which both use, starts in "/" and never
// sees Config.Dir as its working directory. The guest's chdir still
// works, and nothing outside Dir becomes reachable.
func TestSandboxRelativePaths(t *testing.T) {
	for _, src := range []string{"testdata/cguest/main.c", "testdata/rustguest/main.rs"} {
		t.Run(filepath.Ext(src)[1:], func(t *testing.T) {
			session, outside := sandboxDirs(t)
			data := t.TempDir()
			for _, d := range []string{"sub", ".bingo"} {
				if err := os.Mkdir(filepath.Join(session, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for path, text := range map[string]string{
				filepath.Join(session, ".bingo", "secret"): "hidden",
				filepath.Join(session, "sub", "deep.txt"):  "deep",
				filepath.Join(data, "inside.txt"):          "data",
			} {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := startProbe(t, sharedHost, Config{
				Path: buildCGuest(t, src), Name: "relpath", Dir: session, Writable: true,
				Mounts: []Mount{{Dir: data, Writable: true}}, Hide: filepath.Join(session, ".bingo"),
			})
			for path, want := range map[string]string{
				"inside.txt":                           "ok inside",
				"./inside.txt":                         "ok inside",
				"sub/deep.txt":                         "ok deep",
				"sub/../inside.txt":                    "ok inside",
				filepath.Join(session, "inside.txt"):   "ok inside",
				filepath.Join(data, "inside.txt"):      "ok data", // the longer mount serves it
				filepath.Join(session, "sub/deep.txt"): "ok deep",
			} {
				if got := p.ask("read " + path); got != want {
					t.Errorf("read %s = %q, want %q", path, got, want)
				}
			}
			for _, path := range []string{"../outside.txt", "out-link", "sub/../../outside.txt", outside, ".bingo/secret", "/.bingo/secret"} {
				if got := p.ask("read " + path); !strings.HasPrefix(got, "err ") {
					t.Errorf("read %s = %q, want an error", path, got)
				}
			}
			if got := p.ask("write new.txt written"); got != "ok" {
				t.Fatalf("write new.txt = %q", got)
			}
			if b, err := os.ReadFile(filepath.Join(session, "new.txt")); err != nil || string(b) != "written" {
				t.Errorf("the host reads %q, %v from Dir/new.txt; want the guest's write", b, err)
			}
			// The guest's own chdir moves what a relative path means.
			if filepath.Ext(src) == ".rs" {
				if got := p.ask("cd sub"); got != "ok" {
					t.Fatalf("cd sub = %q", got)
				}
				if got := p.ask("read deep.txt"); got != "ok deep" {
					t.Errorf("read deep.txt after cd sub = %q", got)
				}
			}
		})
	}
}

// The errno values docs/plugins.md gives a WASI author ("Writing a WASI
// plugin in any language") for what the sandbox refuses, as a C guest
// sees them.
func TestSandboxDocumentedErrnos(t *testing.T) {
	const eperm, enoent, enotcapable, erofs = "err 63", "err 44", "err 76", "err 69"
	session, outside := sandboxDirs(t)
	if err := os.Mkdir(filepath.Join(session, ".bingo"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startC(t, sharedHost, Config{Dir: session, Hide: filepath.Join(session, ".bingo")})
	for cmd, want := range map[string]string{
		"read ../outside.txt":     eperm,
		"read " + outside:         enoent, // under no mount
		"read .bingo":             enoent,
		"write new.txt x":         erofs,
		"write inside.txt x":      erofs,
		"openrw inside.txt":       erofs, // write rights fail even a read
		"read inside.txt":         `ok inside`,
		"read /" + "inside.txt":   `ok inside`, // "/" is the working directory
		"write " + outside + " x": enoent,
	} {
		if got := p.ask(cmd); got != want {
			t.Errorf("%s = %q, want %q", cmd, got, want)
		}
	}
	// A link out of the mount, outside any hidden directory's spine.
	q := startC(t, sharedHost, Config{Dir: session, Name: "nohide"})
	for _, link := range []string{"out-link", "out-link-abs"} {
		if got := q.ask("read " + link); got != eperm {
			t.Errorf("read %s = %q, want %q", link, got, eperm)
		}
	}
	r := startC(t, sharedHost, Config{Name: "nodir"})
	if got := r.ask("read " + outside); got != enotcapable {
		t.Errorf("read %s with no working directory = %q, want %q", outside, got, enotcapable)
	}
}
