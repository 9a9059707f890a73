package wasm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plugin's data directory mounted read-write and its root read-only,
// beside a read-only session dir: the guest keeps state in the one, reads
// what it ships in the other, and writes nowhere else; a link in a mount
// leads no further than the mount.
func TestSandboxMounts(t *testing.T) {
	session, outside := sandboxDirs(t)
	base := t.TempDir()
	data := filepath.Join(base, "data", "plugins", "probe")
	pluginRoot := filepath.Join(base, "plugins", "probe")
	for _, d := range []string{data, pluginRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pluginRoot, "shipped.txt"), []byte("shipped"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(data, "out-link")); err != nil {
		t.Fatal(err)
	}
	p := startProbe(t, sharedHost, Config{Dir: session, Mounts: []Mount{
		{Dir: data, Writable: true},
		{Dir: pluginRoot},
		{Dir: session, Writable: true}, // mounted already: the first mount decides
	}})

	if got := p.ask("cwd"); got != filepath.ToSlash(session) {
		t.Errorf("guest cwd = %q, want the session dir %q: Dir stays the first mount", got, session)
	}
	state := filepath.Join(data, "state.json")
	if got := p.ask("write " + state); got != "ok" {
		t.Fatalf("write into the data dir = %s", got)
	}
	if b, err := os.ReadFile(state); err != nil || string(b) != "written" {
		t.Fatalf("host reads %q, %v; want the guest's write", b, err)
	}
	if got := p.ask("read " + state); got != `ok "written"` {
		t.Errorf("read back from the data dir = %s", got)
	}
	if got := p.ask("read " + filepath.Join(pluginRoot, "shipped.txt")); got != `ok "shipped"` {
		t.Errorf("read from the plugin root = %s", got)
	}
	for _, path := range []string{
		filepath.Join(pluginRoot, "new.txt"),
		filepath.Join(pluginRoot, "shipped.txt"),
		filepath.Join(session, "new.txt"),
		filepath.Join(data, "out-link"),
		filepath.Join(data, "..", "escape.txt"),
		filepath.Join(base, "escape.txt"),
	} {
		if got := p.ask("write " + path); !strings.HasPrefix(got, "err ") {
			t.Errorf("write %s = %s, want an error", path, got)
		}
	}
	for _, path := range []string{filepath.Join(data, "out-link"), outside} {
		if got := p.ask("read " + path); !strings.HasPrefix(got, "err ") {
			t.Errorf("read %s = %s, want an error", path, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(pluginRoot, "shipped.txt")); string(b) != "shipped" {
		t.Errorf("the plugin root's file changed: %q", b)
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret outside" {
		t.Errorf("the file outside changed: %q", b)
	}
	for _, f := range []string{filepath.Join(session, "new.txt"), filepath.Join(pluginRoot, "new.txt"), filepath.Join(base, "data", "plugins", "escape.txt"), filepath.Join(base, "escape.txt")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("the host sees %s after a refused write", f)
		}
	}
}
