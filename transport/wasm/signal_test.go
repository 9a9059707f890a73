package wasm

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
)

// buildGuest builds the Go guest testdata/name for wasip1 with ldflags,
// into the test's temporary directory, and returns its path.
func buildGuest(t *testing.T, name, ldflags string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".wasm")
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, "./testdata/"+name)
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatal(&buildError{name: name, out: string(b), err: err})
	}
	return out
}

// A Go guest that called signal.Notify, and reads stdin on one goroutine
// while others answer, answers every line, not only the first (its
// signal watcher no longer keeps its scheduler from polling stdin), and
// at EOF stops the notification and exits 0.
func TestSignalWatcher(t *testing.T) {
	p := startProbe(t, sharedHost, Config{Path: buildGuest(t, "signalwait", "")})
	for _, s := range []string{"first", "second", "third"} {
		if got := p.ask(s); got != s {
			t.Fatalf("asked %q, answered %q", s, got)
		}
	}
	if err := p.conn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(t, p.conn, 10*time.Second); err != nil {
		t.Fatalf("Wait after Close = %v, want nil: signal.Stop returned and the guest exited", err)
	}
}

// The watcher is found by the name section: a guest built with -s has
// none, and is told apart.
func TestSignalWatcherUnstoppable(t *testing.T) {
	for _, c := range []struct {
		ldflags string
		want    bool
	}{{"", false}, {"-s", true}} {
		bin, err := os.ReadFile(buildGuest(t, "signalwait", c.ldflags))
		if err != nil {
			t.Fatal(err)
		}
		if got := SignalWatcherUnstoppable(bin); got != c.want {
			t.Errorf("built with ldflags %q: SignalWatcherUnstoppable = %v, want %v", c.ldflags, got, c.want)
		}
	}
	probe, err := os.ReadFile(probeWasm)
	if err != nil {
		t.Fatal(err)
	}
	if SignalWatcherUnstoppable(probe) || wasmmeter.Named(probe, signalLoop) {
		t.Error("the probe, which has no signal watcher, is said to have one")
	}
}
