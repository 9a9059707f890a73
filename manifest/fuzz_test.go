package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// FuzzLoad feeds arbitrary bytes to Load as the plugin.json of a plugin
// named "fz". Load must never panic, and whatever it accepts must keep the
// promises the rest of the host builds on.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		`{"name": "fz", "version": "0.1.0", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}}`,
		`{"name": "fz", "version": "1", "entry": {"wasm": "${PLUGIN_ROOT}/plugin.wasm", "env": {"A": "${PLUGIN_ROOT}"}}, "config": {"type": "object"}}`,
		`{"name": "fz", "version": "1", "entry": {"command": "./run", "args": [], "env": {}}}`,
		`{"name": "fz", "version": "1", "entry": {"command": "x", "wasm": "y"}}`,
		`{"name": "fz", "name": "fz"}`,
		`{"name": "FZ", "version": "1", "entry": {"command": "x"}}`,
		`{"name": "fz", "version": "1", "entry": {"command": "x", "env": {"A=B": "1"}}}`,
		`{"name": "fz", "version": "1", "entry": {"command": "x", "args": [1, null]}}`,
		`{"name": "fz", "version": "1", "entry": {"command": "x"}} trailing`,
		`{"name":`, `[]`, `null`, `""`, ``, "\xff", `{"a":{"b":{"c":[[[[]]]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	dir := filepath.Join(f.TempDir(), "fz")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	file := filepath.Join(dir, manifest.FileName)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := manifest.Load(dir, "user")
		if err != nil {
			if m != nil {
				t.Fatalf("Load returned a manifest with an error: %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "plugin "+file+": ") {
				t.Fatalf("error %q does not name the file first", msg)
			}
			return
		}
		if m.Name != "fz" || manifest.ValidName(m.Name) != nil {
			t.Fatalf("accepted name %q", m.Name)
		}
		if strings.TrimSpace(m.Version) == "" {
			t.Fatal("accepted a blank version")
		}
		e := m.Entry
		if (e.Command == "") == (e.Wasm == "") {
			t.Fatalf("accepted an entry without exactly one of command and wasm: %+v", e)
		}
		if e.Wasm != "" && !filepath.IsAbs(e.Wasm) {
			t.Fatalf("wasm %q is not absolute", e.Wasm)
		}
		if e.Command != "" && strings.Contains(e.Command, "/") && !filepath.IsAbs(e.Command) {
			t.Fatalf("command %q is a relative path", e.Command)
		}
		all := append([]string{e.Command, e.Wasm}, e.Args...)
		for k, v := range e.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				t.Fatalf("accepted env name %q", k)
			}
			all = append(all, v)
		}
		for _, s := range all {
			if strings.Contains(s, manifest.RootVar) {
				t.Fatalf("%q still holds %s", s, manifest.RootVar)
			}
			if strings.ContainsRune(s, 0) {
				t.Fatalf("%q holds a NUL", s)
			}
		}
		if m.Config != nil && !strings.HasPrefix(strings.TrimSpace(string(m.Config)), "{") {
			t.Fatalf("accepted config %s", m.Config)
		}
	})
}
