package manifest_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// writePlugin writes content as parent/name/plugin.json and returns the
// plugin directory.
func writePlugin(t *testing.T, parent, name, content string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mk builds a manifest for directory "wc" from an entry object, so the
// table below reads as the part each case is about.
func mk(entry string) string {
	return `{"name": "wc", "version": "1.0.0", "entry": ` + entry + `}`
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name    string
		dir     string // directory name; "wc" if empty
		content string
		want    []string // substrings of the error
	}{
		// the document
		{name: "empty file", content: "  \n", want: []string{"empty file"}},
		{name: "array", content: `[]`, want: []string{"must be a JSON object", "an array"}},
		{name: "string", content: `"wc"`, want: []string{"must be a JSON object", "a string"}},
		{name: "null", content: `null`, want: []string{"must be a JSON object", "null"}},
		{name: "number", content: `42`, want: []string{"must be a JSON object", "a number"}},
		{name: "syntax error says where", content: "{\n  \"name\": \"wc\",\n  oops\n}", want: []string{"invalid JSON at line 3, column 3"}},
		{name: "truncated", content: `{"name": "wc",`, want: []string{"invalid JSON at line 1", "unexpected end of JSON input"}},
		{name: "trailing data", content: mk(`{"command":"x"}`) + ` {}`, want: []string{"invalid JSON", "after top-level value"}},
		{name: "invalid UTF-8", content: `{"name": "wc", "version": "1` + "\xff" + `", "entry": {"command": "x"}}`, want: []string{"not valid UTF-8"}},
		{name: "unknown top-level field", content: `{"name": "wc", "version": "1", "entyr": {"command": "x"}}`, want: []string{`unknown field "entyr"`, "known fields: name, version, entry, config"}},
		{name: "field names are case-sensitive", content: `{"Name": "wc", "version": "1", "entry": {"command": "x"}}`, want: []string{`unknown field "Name"`}},
		{name: "duplicate field", content: `{"name": "wc", "name": "wc", "version": "1", "entry": {"command": "x"}}`, want: []string{`field "name" appears more than once`}},

		// name
		{name: "missing name", content: `{"version": "1", "entry": {"command": "x"}}`, want: []string{`missing "name"`}},
		{name: "name not a string", content: `{"name": 7, "version": "1", "entry": {"command": "x"}}`, want: []string{`"name" must be a string, found a number`}},
		{name: "name null", content: `{"name": null, "version": "1", "entry": {"command": "x"}}`, want: []string{`"name" must be a string, found null`}},
		{name: "name invalid", dir: "Wc", content: `{"name": "Wc", "version": "1", "entry": {"command": "x"}}`, want: []string{"invalid plugin name", "a-z, 0-9"}},
		{name: "name with underscore", dir: "w_c", content: `{"name": "w_c", "version": "1", "entry": {"command": "x"}}`, want: []string{"invalid plugin name", `'_'`}},
		{name: "name differs from directory", dir: "wordcount", content: mk(`{"command": "x"}`), want: []string{`name "wc" does not match the directory name "wordcount"`}},

		// version
		{name: "missing version", content: `{"name": "wc", "entry": {"command": "x"}}`, want: []string{`missing "version"`}},
		{name: "version not a string", content: `{"name": "wc", "version": 1, "entry": {"command": "x"}}`, want: []string{`"version" must be a string, found a number`}},
		{name: "version empty", content: `{"name": "wc", "version": "", "entry": {"command": "x"}}`, want: []string{`"version" must not be blank`}},
		{name: "version blank", content: `{"name": "wc", "version": "  ", "entry": {"command": "x"}}`, want: []string{`"version" must not be blank`}},

		// entry
		{name: "missing entry", content: `{"name": "wc", "version": "1"}`, want: []string{`missing "entry"`}},
		{name: "entry not an object", content: mk(`"python3"`), want: []string{`"entry" must be a JSON object, found a string`}},
		{name: "unknown entry field", content: mk(`{"command": "x", "arg": []}`), want: []string{`unknown field "entry.arg"`, "known fields: command, wasm, url, args, env, headers, oauth, protocol"}},
		{name: "protocol unknown", content: mk(`{"command": "x", "protocol": "lsp"}`), want: []string{`"entry.protocol" is "lsp"`, `"bingo"`, `"mcp"`}},
		{name: "protocol not a string", content: mk(`{"command": "x", "protocol": 1}`), want: []string{`"entry.protocol" must be a string, found a number`}},
		{name: "both command and wasm", content: mk(`{"command": "x", "wasm": "p.wasm"}`), want: []string{`both "command" and "wasm"`, "exactly one"}},
		{name: "neither command nor wasm", content: mk(`{"args": ["a"]}`), want: []string{`needs one of "command"`, `"wasm" (runs a WASI module) or "url"`}},
		{name: "empty entry", content: mk(`{}`), want: []string{`needs one of "command"`}},
		{name: "command empty", content: mk(`{"command": ""}`), want: []string{`"entry.command" must not be empty`}},
		{name: "command not a string", content: mk(`{"command": ["python3"]}`), want: []string{`"entry.command" must be a string, found an array`}},
		{name: "command with NUL", content: mk(`{"command": "py\u0000"}`), want: []string{`"entry.command" contains a NUL`}},
		{name: "wasm empty", content: mk(`{"wasm": ""}`), want: []string{`"entry.wasm" must not be empty`}},
		{name: "wasm not a string", content: mk(`{"wasm": true}`), want: []string{`"entry.wasm" must be a string, found a boolean`}},

		// a remote MCP server
		{name: "url without protocol mcp", content: mk(`{"url": "https://a.example/mcp"}`), want: []string{`"entry.url" names a remote MCP server, so "entry.protocol" must be "mcp"`}},
		{name: "url and command", content: mk(`{"url": "https://a.example/mcp", "command": "x", "protocol": "mcp"}`), want: []string{`both "url" and "command"`}},
		{name: "url not http", content: mk(`{"url": "file:///etc/passwd", "protocol": "mcp"}`), want: []string{`is not an http:// or https:// URL`}},
		{name: "headers without url", content: mk(`{"command": "x", "headers": {"A": "b"}}`), want: []string{`"entry.headers" is for a remote MCP server's "url" only`}},
		{name: "header name invalid", content: mk(`{"url": "https://a.example/mcp", "protocol": "mcp", "headers": {"A B": "c"}}`), want: []string{`"A B" is not a valid HTTP header name`}},
		{name: "header value not a string", content: mk(`{"url": "https://a.example/mcp", "protocol": "mcp", "headers": {"A": 1}}`), want: []string{`"entry.headers.A" must be a string, found a number`}},

		// args
		{name: "args not an array", content: mk(`{"command": "x", "args": "a b"}`), want: []string{`"entry.args" must be an array of strings, found a string`}},
		{name: "arg not a string", content: mk(`{"command": "x", "args": ["a", 2]}`), want: []string{`"entry.args[1]" must be a string, found a number`}},
		{name: "arg null", content: mk(`{"command": "x", "args": [null]}`), want: []string{`"entry.args[0]" must be a string, found null`}},
		{name: "arg with NUL", content: mk(`{"command": "x", "args": ["a\u0000b"]}`), want: []string{`"entry.args[0]" contains a NUL`}},

		// env
		{name: "env not an object", content: mk(`{"command": "x", "env": ["A=1"]}`), want: []string{`"entry.env" must be a JSON object, found an array`}},
		{name: "env empty name", content: mk(`{"command": "x", "env": {"": "1"}}`), want: []string{`empty variable name`}},
		{name: "env name with =", content: mk(`{"command": "x", "env": {"A=B": "1"}}`), want: []string{`variable name "A=B" contains "="`}},
		{name: "env name with NUL", content: mk(`{"command": "x", "env": {"A\u0000": "1"}}`), want: []string{`contains a NUL`}},
		{name: "env value not a string", content: mk(`{"command": "x", "env": {"A": 1}}`), want: []string{`"entry.env.A" must be a string, found a number`}},
		{name: "env value with NUL", content: mk(`{"command": "x", "env": {"A": "1\u0000"}}`), want: []string{`"entry.env.A" contains a NUL`}},
		{name: "env duplicate name", content: mk(`{"command": "x", "env": {"A": "1", "A": "2"}}`), want: []string{`field "A" appears more than once`}},

		// config
		{name: "config array", content: `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": []}`, want: []string{`"config" must be a JSON object`, "found an array"}},
		{name: "config string", content: `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": "schema"}`, want: []string{`"config" must be a JSON object`, "found a string"}},
		{name: "config null", content: `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": null}`, want: []string{`"config" must be a JSON object`, "found null"}},
		{name: "config boolean schema", content: `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": true}`, want: []string{`"config" must be a JSON object`, "found a boolean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirName := tt.dir
			if dirName == "" {
				dirName = "wc"
			}
			dir := writePlugin(t, t.TempDir(), dirName, tt.content)
			m, err := manifest.Load(dir, "user")
			if err == nil {
				t.Fatalf("Load accepted %s: %+v", tt.content, m)
			}
			file := filepath.Join(dir, manifest.FileName)
			msg := err.Error()
			if !strings.HasPrefix(msg, "plugin "+file+": ") {
				t.Errorf("error %q does not start with %q", msg, "plugin "+file+": ")
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			var p manifest.Problem
			if !errors.As(err, &p) || p.File != file {
				t.Errorf("error is not a Problem naming %s: %#v", file, err)
			}
			if strings.Count(msg, file) != 1 {
				t.Errorf("error %q names the file more than once", msg)
			}
		})
	}
}

func TestLoadFileProblems(t *testing.T) {
	t.Run("missing plugin.json", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "wc")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := manifest.Load(dir, "user")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load = %v, want fs.ErrNotExist", err)
		}
		if want := "plugin " + filepath.Join(dir, manifest.FileName) + ": cannot read it: "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q, want prefix %q", err, want)
		}
	})
	t.Run("plugin.json is a directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "wc")
		if err := os.MkdirAll(filepath.Join(dir, manifest.FileName), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := manifest.Load(dir, "user")
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load = %v, want a not-a-regular-file error", err)
		}
	})
	t.Run("plugin.json is a FIFO: refused without blocking", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "wc")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, manifest.FileName), 0o644); err != nil {
			t.Skipf("cannot make a FIFO here: %v", err)
		}
		_, err := manifest.Load(dir, "user")
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load = %v, want a not-a-regular-file error", err)
		}
	})
}

// TestLoadSizeCap pads a valid manifest with spaces to exactly the cap
// (accepted) and one byte past it (refused).
func TestLoadSizeCap(t *testing.T) {
	base := mk(`{"command": "x"}`)
	pad := func(n int) string { return base + strings.Repeat(" ", n-len(base)) }

	dir := writePlugin(t, t.TempDir(), "wc", pad(manifest.MaxSize))
	if _, err := manifest.Load(dir, "user"); err != nil {
		t.Fatalf("a manifest of exactly MaxSize bytes: %v", err)
	}
	dir = writePlugin(t, t.TempDir(), "wc", pad(manifest.MaxSize+1))
	_, err := manifest.Load(dir, "user")
	if err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("a manifest one byte over MaxSize: %v, want a size error", err)
	}
}

func TestLoadAccepts(t *testing.T) {
	tests := []struct {
		name  string
		dir   string // directory and plugin name; "wc" if empty
		entry string
		check func(t *testing.T, root string, e manifest.Entry)
	}{
		{
			name:  "spec example: bare command stays a PATH lookup, root expands in args",
			entry: `{"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}`,
			check: func(t *testing.T, root string, e manifest.Entry) {
				want := manifest.Entry{Command: "python3", Args: []string{root + "/main.py"}, Protocol: manifest.ProtocolBingo}
				if !reflect.DeepEqual(e, want) {
					t.Errorf("entry = %+v, want %+v", e, want)
				}
				if e.Transport() != manifest.TransportExec {
					t.Errorf("Transport = %q, want exec", e.Transport())
				}
			},
		},
		{
			name:  "root expands in command",
			entry: `{"command": "${PLUGIN_ROOT}/bin/run"}`,
			check: wantCommand(func(root string) string { return root + "/bin/run" }),
		},
		{
			name:  "relative command with ./ resolves against the root",
			entry: `{"command": "./run.sh"}`,
			check: wantCommand(func(root string) string { return filepath.Join(root, "run.sh") }),
		},
		{
			name:  "relative command with a slash resolves against the root",
			entry: `{"command": "bin/run"}`,
			check: wantCommand(func(root string) string { return filepath.Join(root, "bin", "run") }),
		},
		{
			name:  "absolute command stays",
			entry: `{"command": "/usr/bin/env", "args": ["python3"]}`,
			check: wantCommand(func(string) string { return "/usr/bin/env" }),
		},
		{
			name:  "wasm with root",
			entry: `{"wasm": "${PLUGIN_ROOT}/plugin.wasm"}`,
			check: wantWasm(func(root string) string { return root + "/plugin.wasm" }),
		},
		{
			name:  "relative wasm resolves against the root",
			entry: `{"wasm": "plugin.wasm"}`,
			check: wantWasm(func(root string) string { return filepath.Join(root, "plugin.wasm") }),
		},
		{
			name:  "absolute wasm stays",
			entry: `{"wasm": "/opt/p.wasm"}`,
			check: wantWasm(func(string) string { return "/opt/p.wasm" }),
		},
		{
			name:  "root expands in every arg, every env value, more than once",
			entry: `{"command": "x", "args": ["${PLUGIN_ROOT}", "--a=${PLUGIN_ROOT}:${PLUGIN_ROOT}/lib", "plain"], "env": {"PYTHONPATH": "${PLUGIN_ROOT}/lib", "MODE": "fast", "${PLUGIN_ROOT}": "names are not expanded"}}`,
			check: func(t *testing.T, root string, e manifest.Entry) {
				wantArgs := []string{root, "--a=" + root + ":" + root + "/lib", "plain"}
				if !reflect.DeepEqual(e.Args, wantArgs) {
					t.Errorf("args = %q, want %q", e.Args, wantArgs)
				}
				wantEnv := map[string]string{"PYTHONPATH": root + "/lib", "MODE": "fast", "${PLUGIN_ROOT}": "names are not expanded"}
				if !reflect.DeepEqual(e.Env, wantEnv) {
					t.Errorf("env = %q, want %q", e.Env, wantEnv)
				}
			},
		},
		{
			name:  "other ${...} and $PLUGIN_ROOT are left as written",
			entry: `{"command": "x", "args": ["${HOME}/x", "$PLUGIN_ROOT", "${plugin_root}", "${PLUGIN_ROOT"], "env": {"A": "${PATH}"}}`,
			check: func(t *testing.T, root string, e manifest.Entry) {
				wantArgs := []string{"${HOME}/x", "$PLUGIN_ROOT", "${plugin_root}", "${PLUGIN_ROOT"}
				if !reflect.DeepEqual(e.Args, wantArgs) {
					t.Errorf("args = %q, want %q", e.Args, wantArgs)
				}
				if e.Env["A"] != "${PATH}" {
					t.Errorf("env A = %q, want ${PATH}", e.Env["A"])
				}
			},
		},
		{
			name:  "empty args and env are kept empty, not nil",
			entry: `{"command": "x", "args": [], "env": {}}`,
			check: func(t *testing.T, root string, e manifest.Entry) {
				if e.Args == nil || len(e.Args) != 0 || e.Env == nil || len(e.Env) != 0 {
					t.Errorf("entry = %#v", e)
				}
			},
		},
		{
			name:  "longest name, starting with a digit",
			dir:   "0" + strings.Repeat("a-", 19) + "z",
			entry: `{"command": "x"}`,
			check: func(t *testing.T, root string, e manifest.Entry) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.dir
			if name == "" {
				name = "wc"
			}
			content := `{"name": "` + name + `", "version": "0.1.0", "entry": ` + tt.entry + `}`
			dir := writePlugin(t, t.TempDir(), name, content)
			m, err := manifest.Load(dir, "project")
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != name || m.Version != "0.1.0" || m.Root != dir || m.Layer != "project" ||
				m.File != filepath.Join(dir, manifest.FileName) || m.Config != nil {
				t.Errorf("manifest = %+v", m)
			}
			tt.check(t, m.Root, m.Entry)
		})
	}
}

func wantCommand(want func(root string) string) func(*testing.T, string, manifest.Entry) {
	return func(t *testing.T, root string, e manifest.Entry) {
		t.Helper()
		if w := want(root); e.Command != w || e.Wasm != "" {
			t.Errorf("entry = %+v, want command %q", e, w)
		}
		if e.Transport() != manifest.TransportExec {
			t.Errorf("Transport = %q, want exec", e.Transport())
		}
	}
}

func wantWasm(want func(root string) string) func(*testing.T, string, manifest.Entry) {
	return func(t *testing.T, root string, e manifest.Entry) {
		t.Helper()
		if w := want(root); e.Wasm != w || e.Command != "" {
			t.Errorf("entry = %+v, want wasm %q", e, w)
		}
		if e.Transport() != manifest.TransportWasm {
			t.Errorf("Transport = %q, want wasm", e.Transport())
		}
	}
}

func TestLoadConfigKeptNotValidated(t *testing.T) {
	schema := `{"type": "object", "properties": {"limit": {"type": "integer"}}, "required": ["limit"]}`
	dir := writePlugin(t, t.TempDir(), "wc", `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": `+schema+`}`)
	m, err := manifest.Load(dir, "user")
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(m.Config, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(schema), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config = %s, want %s", m.Config, schema)
	}
	// ${PLUGIN_ROOT} is an entry variable; config is the author's text.
	dir = writePlugin(t, t.TempDir(), "wc", `{"name": "wc", "version": "1", "entry": {"command": "x"}, "config": {"description": "${PLUGIN_ROOT}"}}`)
	if m, err = manifest.Load(dir, "user"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Config), "${PLUGIN_ROOT}") {
		t.Errorf("Config = %s, expanded", m.Config)
	}
}

// TestLoadRelativeDir: Root and File are absolute even when the directory
// is given relative to the working directory.
func TestLoadRelativeDir(t *testing.T) {
	parent := t.TempDir()
	writePlugin(t, parent, "wc", mk(`{"command": "./run", "args": ["${PLUGIN_ROOT}"]}`))
	t.Chdir(parent)
	m, err := manifest.Load("wc", "dir")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(parent, "wc")
	if m.Root != root || m.File != filepath.Join(root, manifest.FileName) || m.Entry.Command != filepath.Join(root, "run") || m.Entry.Args[0] != root {
		t.Errorf("manifest = %+v, want everything under %s", m, root)
	}
}

func TestValidName(t *testing.T) {
	good := []string{"a", "0", "wordcount", "word-count", "wc2", "a-", "9lives", strings.Repeat("a", 40)}
	bad := []string{"", "-a", "Wordcount", "word_count", "word__count", "plugin__x", "word.count", "word count", "a/b", "..", "é", strings.Repeat("a", 41)}
	for _, n := range good {
		if err := manifest.ValidName(n); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		err := manifest.ValidName(n)
		if err == nil {
			t.Errorf("ValidName(%q) = nil, want an error", n)
			continue
		}
		if !errors.Is(err, manifest.ErrInvalidName) {
			t.Errorf("ValidName(%q) = %v, does not wrap ErrInvalidName", n, err)
		}
		if !strings.Contains(err.Error(), `1 to 40 characters of a-z, 0-9 and "-", starting with a letter or a digit`) {
			t.Errorf("ValidName(%q) = %v, does not say the rule", n, err)
		}
	}
}

func TestProblemError(t *testing.T) {
	reason := errors.New("boom")
	p := manifest.Problem{File: "/p/wc/plugin.json", Err: reason}
	if got, want := p.Error(), "plugin /p/wc/plugin.json: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(p, reason) {
		t.Error("errors.Is does not see the reason through a Problem")
	}
	if strings.Contains(p.Error(), "\n") {
		t.Error("a Problem is one line")
	}
}

func TestEnviron(t *testing.T) {
	host := []string{"PATH=/bin", "HOME=/home/u", "MODE=slow", "KEEP=a=b"}
	hostCopy := append([]string(nil), host...)
	m := &manifest.Manifest{Entry: manifest.Entry{Command: "x", Env: map[string]string{"MODE": "fast", "ADDED": "1", "B": "x=y"}}}
	got := m.Environ(host)
	want := []string{"PATH=/bin", "HOME=/home/u", "KEEP=a=b", "ADDED=1", "B=x=y", "MODE=fast"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(host, hostCopy) {
		t.Errorf("Environ modified host: %q", host)
	}

	// No entry.env: the host's environment, in a slice of its own.
	m = &manifest.Manifest{Entry: manifest.Entry{Command: "x"}}
	got = m.Environ(host)
	if !reflect.DeepEqual(got, host) {
		t.Errorf("Environ = %q, want %q", got, host)
	}
	got[0] = "CHANGED=1"
	if host[0] != "PATH=/bin" {
		t.Error("Environ returned the host slice itself")
	}

	// A prefix of a name is a different name.
	m = &manifest.Manifest{Entry: manifest.Entry{Command: "x", Env: map[string]string{"PAT": "p"}}}
	if got := m.Environ([]string{"PATH=/bin"}); !reflect.DeepEqual(got, []string{"PATH=/bin", "PAT=p"}) {
		t.Errorf("Environ = %q", got)
	}
}

// entry.protocol, with either transport; unsaid or empty is bingo.
func TestLoadProtocol(t *testing.T) {
	for entry, want := range map[string]string{
		`{"command": "x", "protocol": "mcp"}`:   manifest.ProtocolMCP,
		`{"wasm": "s.wasm", "protocol": "mcp"}`: manifest.ProtocolMCP,
		`{"command": "x", "protocol": "bingo"}`: manifest.ProtocolBingo,
		`{"command": "x", "protocol": ""}`:      manifest.ProtocolBingo,
		`{"wasm": "s.wasm"}`:                    manifest.ProtocolBingo,
	} {
		dir := filepath.Join(t.TempDir(), "wc")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, manifest.FileName), []byte(`{"name": "wc", "version": "1", "entry": `+entry+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := manifest.Load(dir, "user")
		if err != nil || m.Entry.Protocol != want {
			t.Errorf("entry %s: Protocol %v, %v; want %q", entry, m, err, want)
		}
	}
}

// TestLoadArgsNamingAFileBesideTheManifest: an exec plugin starts in the
// session's directory, so an argument naming a file of the plugin becomes
// its absolute path; flags, directories, names of nothing there, and a
// wasm guest's arguments stay as written.
func TestLoadArgsNamingAFileBesideTheManifest(t *testing.T) {
	parent := t.TempDir()
	dir := writePlugin(t, parent, "wc", mk(`{"command": "python3",
		"args": ["b.py", "tools/lint.py", "-v", "tools", "absent.py", "--conf=b.py", "../wc/b.py", "-x"]}`))
	for _, f := range []string{"b.py", "tools/lint.py", "-x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := manifest.Load(dir, manifest.LayerProject)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "b.py"), filepath.Join(dir, "tools", "lint.py"), "-v", "tools", "absent.py", "--conf=b.py", filepath.Join(dir, "b.py"), "-x"}
	if !reflect.DeepEqual(m.Entry.Args, want) {
		t.Errorf("args = %q\nwant %q", m.Entry.Args, want)
	}

	writePlugin(t, parent, "wc", mk(`{"wasm": "plugin.wasm", "args": ["b.py"]}`))
	if m, err = manifest.Load(dir, manifest.LayerProject); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Entry.Args, []string{"b.py"}) {
		t.Errorf("wasm args = %q, want as written", m.Entry.Args)
	}
}
