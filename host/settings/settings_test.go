package settings

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// write puts content in dir/name and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadOK(t *testing.T, files ...string) Settings {
	t.Helper()
	s, errs := Load(files...)
	if len(errs) > 0 {
		t.Fatalf("Load: %v", errs)
	}
	return s
}

func TestDefaults(t *testing.T) {
	want := Deadlines{
		Initialize: 10 * time.Second, Tool: 60 * time.Second, Command: 30 * time.Second,
		Complete: 2 * time.Second, Contributor: 2 * time.Second, Compactor: 30 * time.Second,
		Provider: 60 * time.Second, ProviderIdle: 30 * time.Second, ProviderTotal: 10 * time.Minute,
		Hook: 2 * time.Second, Service: 10 * time.Second, Grace: 5 * time.Second, IdleStop: 5 * time.Minute,
	}
	if got := DefaultDeadlines(); got != want {
		t.Errorf("DefaultDeadlines() = %+v, want %+v", got, want)
	}
	dir := t.TempDir()
	// No files, a missing file and an empty file all leave the defaults.
	for _, files := range [][]string{
		nil,
		{filepath.Join(dir, "missing.json")},
		{write(t, dir, "empty.json", " \n")},
	} {
		s := loadOK(t, files...)
		if !reflect.DeepEqual(s, Default()) {
			t.Errorf("Load(%v) = %+v, want the defaults", files, s)
		}
	}
	if d := Default(); d.Deadlines != want || d.Limits != (Limits{ProviderResponseMiB: 32}) || d.Turn != (Turn{MaxSteps: 20, CompactAt: 200000, ToolResultMax: 100000, ToolsMax: 60000}) {
		t.Errorf("Default() = %+v", d)
	}
}

// Every deadline and limit field has exactly one JSON key, so none can be
// unsettable.
func TestKeysCoverEveryField(t *testing.T) {
	t.Run("deadlines", func(t *testing.T) { keysCoverEveryField(t, deadlineKeys, DeadlineField) })
	t.Run("limits", func(t *testing.T) { keysCoverEveryField(t, limitKeys, limitField) })
}

func keysCoverEveryField[S any, F ~int | ~int64](t *testing.T, keys []string, field func(*S, string) *F) {
	n := reflect.TypeFor[S]().NumField()
	if len(keys) != n {
		t.Fatalf("%d keys for %d fields", len(keys), n)
	}
	var d S
	for i, key := range keys {
		f := field(&d, key)
		if f == nil {
			t.Fatalf("key %q names no field", key)
		}
		*f = F(i + 1)
	}
	v := reflect.ValueOf(d)
	seen := map[int64]bool{}
	for i := range n {
		x := v.Field(i).Int()
		if x == 0 || seen[x] {
			t.Errorf("field %s not set by exactly one key", v.Type().Field(i).Name)
		}
		seen[x] = true
	}
}

func TestLoadEveryKey(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "s.json", `{
  "permissions": {"allow": ["plugin__wordcount__count"], "deny": ["plugin__evil__*"], "ask": ["Bash"]},
  "plugins": {"wordcount": {"any": ["json", 1, null]}, "other": null},
  "deadlines": {"initialize":"1s","tool":"2s","command":"3s","complete":"4s","contributor":"5s",
                "compactor":"6s","provider":"7s","providerIdle":"8s","providerTotal":"9m","hook":"150ms","service":"10s","grace":"1m30s","idleStop":"45s"},
  "limits": {"providerResponseMiB": 4},
  "sandbox": {"wc": {"writable": true, "memoryMiB": 512}, "narrow": {}},
  "mcp": {"docs": {"resources": true, "sampling": true, "maxTokens": 500}, "plain": {}},
  "provider": {"openai": {"baseURL": "https://api.example.com/v1", "model": "gpt-x", "apiKeyEnv": "OPENAI_API_KEY"}},
  "turn": {"maxSteps": 7, "compactAt": 1000, "toolResultMax": 2000, "toolsMax": 3000},
  "wasmCompile": {"moduleMiB": 64, "functionKiB": 512, "blocksPerFunction": 9000, "time": "1m", "memoryMiB": 1024},
  "untrustedWasm": {"memoryMiB": 2048},
  "env": {"withhold": ["AWS_SECRET_ACCESS_KEY"], "plugins": {"deploy": {"withhold": ["GITHUB_TOKEN"], "pass": ["OPENAI_API_KEY"]}, "bare": {}}}
}`)
	s := loadOK(t, f)
	want := Settings{
		Permissions: Permissions{
			Allow: []string{"plugin__wordcount__count"},
			Deny:  []string{"plugin__evil__*"},
			Ask:   []string{"Bash"},
		},
		Plugins: map[string]json.RawMessage{
			"wordcount": json.RawMessage(`{"any": ["json", 1, null]}`),
			"other":     json.RawMessage(`null`),
		},
		Deadlines: Deadlines{
			Initialize: 1 * time.Second, Tool: 2 * time.Second, Command: 3 * time.Second,
			Complete: 4 * time.Second, Contributor: 5 * time.Second, Compactor: 6 * time.Second,
			Provider: 7 * time.Second, ProviderIdle: 8 * time.Second, ProviderTotal: 9 * time.Minute,
			Hook: 150 * time.Millisecond, Service: 10 * time.Second, Grace: 90 * time.Second, IdleStop: 45 * time.Second,
		},
		Limits: Limits{ProviderResponseMiB: 4},
		Sandbox: map[string]Sandbox{
			"wc":     {Writable: true, MemoryMiB: 512},
			"narrow": {},
		},
		MCP: map[string]MCP{
			"docs":  {Resources: true, Sampling: true, MaxTokens: 500},
			"plain": {},
		},
		Provider: ProviderChoice{OpenAI: &OpenAI{
			BaseURL: "https://api.example.com/v1", Model: "gpt-x", APIKeyEnv: "OPENAI_API_KEY",
		}},
		Turn:          Turn{MaxSteps: 7, CompactAt: 1000, ToolResultMax: 2000, ToolsMax: 3000},
		UntrustedWasm: UntrustedWasm{MemoryMiB: 2048},
		WasmCompile:   WasmCompile{ModuleMiB: 64, FunctionKiB: 512, BlocksPerFunction: 9000, Time: time.Minute, MemoryMiB: 1024},
		Env: Env{
			Withhold: []string{"AWS_SECRET_ACCESS_KEY"},
			Plugins: map[string]PluginEnv{
				"deploy": {Withhold: []string{"GITHUB_TOKEN"}, Pass: []string{"OPENAI_API_KEY"}},
				"bare":   {},
			},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", s, want)
	}
}

// "0" is deadlines.idleStop's never: it holds Never, which a later file's
// positive value replaces like any other.
func TestIdleStopZeroIsNever(t *testing.T) {
	dir := t.TempDir()
	never := write(t, dir, "never.json", `{"deadlines": {"idleStop": "0"}}`)
	if s := loadOK(t, never); s.Deadlines.IdleStop != Never {
		t.Fatalf("idleStop \"0\" = %v, want Never", s.Deadlines.IdleStop)
	}
	later := write(t, dir, "later.json", `{"deadlines": {"idleStop": "2m"}}`)
	if s := loadOK(t, never, later); s.Deadlines.IdleStop != 2*time.Minute {
		t.Fatalf("a later 2m over \"0\" = %v", s.Deadlines.IdleStop)
	}
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "user.json", `{
  "permissions": {"allow": ["a", "b"], "deny": ["plugin__evil__*"]},
  "plugins": {"wordcount": {"x": 1, "y": 2}, "kept": {"k": true}},
  "sandbox": {"wc": {"writable": true, "memoryMiB": 512}, "kept": {"memoryMiB": 64}},
  "deadlines": {"tool": "5s", "hook": "1s"},
  "limits": {"providerResponseMiB": 8},
  "provider": {"openai": {"baseURL": "http://localhost:8080/v1", "model": "small", "apiKeyEnv": "KEY"}},
  "turn": {"maxSteps": 3, "compactAt": 50}
}`)
	project := write(t, dir, "project.json", `{
  "permissions": {"allow": ["b", "c"], "deny": [], "ask": ["d"]},
  "plugins": {"wordcount": {"x": 3}},
  "sandbox": {"wc": {"memoryMiB": 128}},
  "deadlines": {"hook": "300ms"},
  "limits": {"providerResponseMiB": 64},
  "provider": {"openai": {"model": "large"}},
  "turn": {"maxSteps": 9}
}`)
	s := loadOK(t, user, project)

	// Permission lists are unioned, in order, without repeats; the
	// project's empty deny does not lift the user's.
	if want := (Permissions{Allow: []string{"a", "b", "c"}, Deny: []string{"plugin__evil__*"}, Ask: []string{"d"}}); !reflect.DeepEqual(s.Permissions, want) {
		t.Errorf("Permissions = %+v, want %+v", s.Permissions, want)
	}
	// plugins.<name> and sandbox.<name> are replaced whole, per name.
	if got := string(s.Plugins["wordcount"]); got != `{"x": 3}` {
		t.Errorf("plugins.wordcount = %s, want the project's whole", got)
	}
	if got := string(s.Plugins["kept"]); got != `{"k": true}` {
		t.Errorf("plugins.kept = %s, want the user's", got)
	}
	if got := s.Sandbox["wc"]; !reflect.DeepEqual(got, Sandbox{MemoryMiB: 128}) {
		t.Errorf("sandbox.wc = %+v, want the project's whole (not writable)", got)
	}
	if got := s.Sandbox["kept"]; !reflect.DeepEqual(got, Sandbox{MemoryMiB: 64}) {
		t.Errorf("sandbox.kept = %+v", got)
	}
	// Deadlines, limits and turn: per field, where set.
	want := DefaultDeadlines()
	want.Tool, want.Hook = 5*time.Second, 300*time.Millisecond
	if s.Deadlines != want {
		t.Errorf("Deadlines = %+v, want %+v", s.Deadlines, want)
	}
	if s.Limits != (Limits{ProviderResponseMiB: 64}) {
		t.Errorf("Limits = %+v", s.Limits)
	}
	if s.Turn != (Turn{MaxSteps: 9, CompactAt: 50, ToolResultMax: 100000, ToolsMax: 60000}) {
		t.Errorf("Turn = %+v", s.Turn)
	}
	// openai over openai: field by field.
	if s.Provider.Plugin != "" || s.Provider.OpenAI == nil ||
		*s.Provider.OpenAI != (OpenAI{BaseURL: "http://localhost:8080/v1", Model: "large", APIKeyEnv: "KEY"}) {
		t.Errorf("Provider = %+v %+v", s.Provider, s.Provider.OpenAI)
	}
}

// Across files given to Load, env.withhold is unioned and
// env.plugins.<name> replaced whole, per name.
func TestMergeEnv(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.json", `{"env": {"withhold": ["A", "B"], "plugins": {"x": {"pass": ["A"]}, "y": {"withhold": ["C"]}}}}`)
	b := write(t, dir, "b.json", `{"env": {"withhold": ["B", "D"], "plugins": {"x": {"withhold": ["E"]}}}}`)
	s := loadOK(t, a, b)
	want := Env{
		Withhold: []string{"A", "B", "D"},
		Plugins: map[string]PluginEnv{
			"x": {Withhold: []string{"E"}},
			"y": {Withhold: []string{"C"}},
		},
	}
	if !reflect.DeepEqual(s.Env, want) {
		t.Errorf("Env = %+v, want %+v", s.Env, want)
	}
}

func TestMergeProviderChoice(t *testing.T) {
	dir := t.TempDir()
	openai := write(t, dir, "openai.json", `{"provider": {"openai": {"model": "m", "apiKeyEnv": "K"}}}`)
	plugin := write(t, dir, "plugin.json", `{"provider": {"plugin": "myplugin/fast"}}`)
	silent := write(t, dir, "silent.json", `{"provider": {}}`)

	s := loadOK(t, openai, plugin)
	if s.Provider != (ProviderChoice{Plugin: "myplugin/fast"}) {
		t.Errorf("plugin over openai = %+v, want the plugin alone", s.Provider)
	}
	s = loadOK(t, plugin, openai)
	if s.Provider.Plugin != "" || s.Provider.OpenAI == nil || *s.Provider.OpenAI != (OpenAI{Model: "m", APIKeyEnv: "K"}) {
		t.Errorf("openai over plugin = %+v, want openai alone", s.Provider)
	}
	withModel := write(t, dir, "model.json", `{"provider": {"plugin": "myplugin/fast", "model": "small"}}`)
	if s := loadOK(t, openai, withModel); s.Provider != (ProviderChoice{Plugin: "myplugin/fast", Model: "small"}) {
		t.Errorf("plugin with a model = %+v", s.Provider)
	}
	// The provider is taken whole per layer: a later plugin choice without
	// a model does not inherit the earlier one's.
	if s := loadOK(t, withModel, plugin); s.Provider != (ProviderChoice{Plugin: "myplugin/fast"}) {
		t.Errorf("plugin over plugin with a model = %+v", s.Provider)
	}
	s = loadOK(t, plugin, silent)
	if s.Provider != (ProviderChoice{Plugin: "myplugin/fast"}) {
		t.Errorf("an empty provider object changed the choice: %+v", s.Provider)
	}
	p, id, ok := s.Provider.PluginProvider()
	if !ok || p != "myplugin" || id != "fast" {
		t.Errorf("PluginProvider() = %q, %q, %v", p, id, ok)
	}
	if _, _, ok := (ProviderChoice{}).PluginProvider(); ok {
		t.Error("PluginProvider() ok on an empty choice")
	}
}

// A later layer's values must not write through to an earlier Settings.
func TestUnionDoesNotAlias(t *testing.T) {
	a := make([]string, 1, 10)
	a[0] = "x"
	b := union(a, []string{"y"})
	_ = union(a, []string{"z"})
	if !reflect.DeepEqual(b, []string{"x", "y"}) {
		t.Errorf("union aliased its input: %v", b)
	}
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		line, col     int
		want          string
	}{
		{"syntax", "{\n  \"turn\": {\"maxSteps\": 3,}\n}", 2, 26, "not valid JSON"},
		{"syntax in a plugin's config", "{\"plugins\": {\"a\": {\"x\": tru}}}", 1, 28, "not valid JSON"},
		{"truncated", "{\"turn\": {", 1, 11, "ends in the middle"},
		{"trailing text", "{}\n{}", 2, 1, "not valid JSON"},
		{"not an object", "[1]", 1, 1, "the settings file must be an object, not an array"},
		{"unknown top key", "{\n  \"permisions\": {}\n}", 2, 3, `unknown key "permisions" in the settings file (known keys: permissions, plugins, deadlines, limits, sandbox, mcp, provider, turn, wasmCompile, untrustedWasm, env)`},
		{"unknown mcp key", `{"mcp": {"s": {"tools": true}}}`, 1, 16, `unknown key "tools" in mcp.s (known keys: resources, sampling, maxTokens)`},
		{"mcp sampling not a bool", `{"mcp": {"s": {"sampling": 1}}}`, 1, 28, "mcp.s.sampling must be true or false, not a number"},
		{"unknown permissions key", `{"permissions": {"alow": []}}`, 1, 18, `unknown key "alow" in permissions (known keys: allow, deny, ask)`},
		{"unknown deadline", `{"deadlines": {"tools": "1s"}}`, 1, 16, `unknown key "tools" in deadlines (known keys: initialize, tool,`},
		{"unknown limit", `{"limits": {"providerResponse": 1}}`, 1, 13, `unknown key "providerResponse" in limits (known keys: providerResponseMiB)`},
		{"limit zero", `{"limits": {"providerResponseMiB": 0}}`, 1, 36, "limits.providerResponseMiB must be a positive whole number, not 0"},
		{"limit a string", `{"limits": {"providerResponseMiB": "32"}}`, 1, 36, "limits.providerResponseMiB must be a positive whole number, not a string"},
		{"unknown sandbox key", `{"sandbox": {"wc": {"memory": 1}}}`, 1, 21, `unknown key "memory" in sandbox.wc (known keys: writable, read, write, network, memoryMiB)`},
		{"sandbox path relative", `{"sandbox": {"wc": {"read": ["notes"]}}}`, 1, 30, `sandbox.wc.read[0] must be an absolute path or one from ~/, not "notes"`},
		{"sandbox host without port", `{"sandbox": {"wc": {"network": ["a:1", "example.com"]}}}`, 1, 40, `sandbox.wc.network[1] must be "host:port" or "*", not "example.com"`},
		{"sandbox require not a bool", `{"sandbox": {"require": {}}}`, 1, 25, "sandbox.require must be true or false"},
		{"unknown provider key", `{"provider": {"anthropic": {}}}`, 1, 15, `unknown key "anthropic" in provider (known keys: plugin, model, openai)`},
		{"unknown openai key", `{"provider": {"openai": {"apiKey": "sk-secret"}}}`, 1, 26, `unknown key "apiKey" in provider.openai`},
		{"unknown turn key", `{"turn": {"steps": 1}}`, 1, 11, `unknown key "steps" in turn`},
		{"duplicate key", `{"turn": {}, "turn": {}}`, 1, 14, `key "turn" appears twice in the settings file`},
		{"duplicate nested key", `{"permissions": {"deny": [], "deny": []}}`, 1, 30, `key "deny" appears twice in permissions`},
		{"list not an array", `{"permissions": {"allow": "a"}}`, 1, 27, "permissions.allow must be an array of strings, not a string"},
		{"list of numbers", `{"permissions": {"deny": ["a", 2]}}`, 1, 32, "permissions.deny[1] must be a string, not a number"},
		{"plugins not an object", `{"plugins": []}`, 1, 13, "plugins must be an object, not an array"},
		{"duration not a string", `{"deadlines": {"tool": 60}}`, 1, 24, "deadlines.tool must be a string, not a number"},
		{"duration without unit", `{"deadlines": {"tool": "60"}}`, 1, 24, `deadlines.tool: "60" is not a duration`},
		{"zero duration", `{"deadlines": {"hook": "0s"}}`, 1, 24, `deadlines.hook must be positive, not "0s"`},
		{"negative duration", `{"deadlines": {"grace": "-1s"}}`, 1, 25, `deadlines.grace must be positive`},
		{"zero for never where it is not", `{"deadlines": {"tool": "0"}}`, 1, 24, `deadlines.tool must be positive, not "0"`},
		{"never spelt otherwise", `{"deadlines": {"idleStop": "0s"}}`, 1, 28, `deadlines.idleStop must be positive, or "0" for never, not "0s"`},
		{"writable not a bool", `{"sandbox": {"wc": {"writable": "yes"}}}`, 1, 33, "sandbox.wc.writable must be true or false, not a string"},
		{"memory zero", `{"sandbox": {"wc": {"memoryMiB": 0}}}`, 1, 34, "sandbox.wc.memoryMiB must be a positive whole number, not 0"},
		{"memory fraction", `{"sandbox": {"wc": {"memoryMiB": 1.5}}}`, 1, 34, "not 1.5"},
		{"sandbox not an object", `{"sandbox": {"wc": true}}`, 1, 20, "sandbox.wc must be an object, not true or false"},
		{"maxSteps negative", `{"turn": {"maxSteps": -1}}`, 1, 23, "turn.maxSteps must be a positive whole number, not -1"},
		{"compactAt null", `{"turn": {"compactAt": null}}`, 1, 24, "turn.compactAt must be a positive whole number, not null"},
		{"provider both", "{\"provider\": {\"plugin\": \"a/b\",\n \"openai\": {\"model\": \"m\"}}}", 1, 14, "provider: choose plugin or openai, not both"},
		{"provider plugin without id", `{"provider": {"plugin": "a"}}`, 1, 25, `provider.plugin must be "<plugin>/<providerId>", not "a"`},
		{"provider plugin empty id", `{"provider": {"plugin": "a/"}}`, 1, 25, `provider.plugin must be "<plugin>/<providerId>"`},
		{"baseURL not a URL", `{"provider": {"openai": {"baseURL": "localhost:8080"}}}`, 1, 37, `provider.openai.baseURL must be an http or https URL, not "localhost:8080"`},
		{"empty model", `{"provider": {"openai": {"model": ""}}}`, 1, 35, "provider.openai.model must not be empty"},
		{"provider model empty", `{"provider": {"plugin": "a/b", "model": ""}}`, 1, 41, "provider.model must not be empty"},
		{"provider model a number", `{"provider": {"plugin": "a/b", "model": 1}}`, 1, 41, "provider.model must be a string, not a number"},
		{"provider model alone", "{\"provider\": {\n  \"model\": \"fast\"}}", 2, 3, "provider.model needs provider.plugin beside it"},
		{"provider model with openai", `{"provider": {"openai": {"model": "m"}, "model": "fast"}}`, 1, 41, "it does not apply to provider.openai, which takes provider.openai.model"},
		{"key in apiKeyEnv", `{"provider": {"openai": {"apiKeyEnv": "sk-abc123"}}}`, 1, 39, "must name an environment variable"},
		{"column counts characters", "{\"plugins\": {\"é\": 1}, \"x\": 1}", 1, 23, `unknown key "x"`},
		{"env not an object", `{"env": ["A"]}`, 1, 9, "env must be an object, not an array"},
		{"unknown env key", "{\"env\": {\n  \"pass\": []}}", 2, 3, `unknown key "pass" in env (known keys: withhold, plugins)`},
		{"env withhold not an array", `{"env": {"withhold": "A"}}`, 1, 22, "env.withhold must be an array of strings, not a string"},
		{"env withhold not a name", `{"env": {"withhold": ["A", "B-C"]}}`, 1, 28, "env.withhold[1] must be an environment variable's name"},
		{"env withhold a secret", `{"env": {"withhold": ["sk-abc123"]}}`, 1, 23, "env.withhold[0] must be an environment variable's name"},
		{"env plugin not an object", `{"env": {"plugins": {"deploy": []}}}`, 1, 32, "env.plugins.deploy must be an object, not an array"},
		{"unknown env plugin key", `{"env": {"plugins": {"deploy": {"allow": []}}}}`, 1, 33, `unknown key "allow" in env.plugins.deploy (known keys: withhold, pass)`},
		{"env pass not a name", "{\"env\": {\"plugins\": {\"d\": {\n \"pass\": [\"OK\",\n  \"1BAD\"]}}}}", 3, 3, "env.plugins.d.pass[1] must be an environment variable's name"},
		{"env pass a number", `{"env": {"plugins": {"d": {"pass": [1]}}}}`, 1, 37, "env.plugins.d.pass[0] must be a string, not a number"},
		{"env key twice", `{"env": {"withhold": [], "withhold": []}}`, 1, 26, `key "withhold" appears twice in env`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := write(t, dir, "bad.json", tc.content)
			good := write(t, dir, "good.json", `{"turn": {"maxSteps": 4}, "permissions": {"deny": ["x"]}}`)
			s, errs := Load(good, bad)
			if len(errs) != 1 {
				t.Fatalf("Load returned %d errors, want 1: %v", len(errs), errs)
			}
			var e *Error
			if !errors.As(errs[0], &e) {
				t.Fatalf("error %T is not an *Error: %v", errs[0], errs[0])
			}
			if e.File != bad || e.Line != tc.line || e.Col != tc.col {
				t.Errorf("placed at %s:%d:%d, want %s:%d:%d (%v)", e.File, e.Line, e.Col, bad, tc.line, tc.col, e)
			}
			msg := errs[0].Error()
			if !strings.HasPrefix(msg, bad+":") || !strings.Contains(msg, tc.want) {
				t.Errorf("error = %q, want the file and %q", msg, tc.want)
			}
			if strings.Contains(msg, "sk-") {
				t.Errorf("error echoes what looks like a secret: %q", msg)
			}
			// The good file still applies; nothing of the bad one does.
			if s.Turn.MaxSteps != 4 || !reflect.DeepEqual(s.Permissions.Deny, []string{"x"}) {
				t.Errorf("the good file did not apply: %+v", s)
			}
			want := Default()
			want.Turn.MaxSteps = 4
			want.Permissions.Deny = []string{"x"}
			if !reflect.DeepEqual(s, want) {
				t.Errorf("part of the malformed file applied: %+v", s)
			}
		})
	}
}

// A malformed file in the middle does not stop a later one from applying,
// and every bad file is reported.
func TestMalformedFilesEachReported(t *testing.T) {
	dir := t.TempDir()
	bad1 := write(t, dir, "bad1.json", `{"turn": {"maxSteps": 0}}`)
	good := write(t, dir, "good.json", `{"turn": {"compactAt": 9}}`)
	bad2 := write(t, dir, "bad2.json", `{`)
	s, errs := Load(bad1, good, bad2)
	if len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), bad1) || !strings.HasPrefix(errs[1].Error(), bad2) {
		t.Fatalf("errs = %v", errs)
	}
	if s.Turn != (Turn{MaxSteps: 20, CompactAt: 9, ToolResultMax: 100000, ToolsMax: 60000}) {
		t.Errorf("Turn = %+v", s.Turn)
	}
}

func TestUnreadable(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "settings.json")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	_, errs := Load(sub)
	var e *Error
	if len(errs) != 1 || !errors.As(errs[0], &e) || e.File != sub || e.Line != 0 {
		t.Fatalf("errs = %v", errs)
	}
	if got := errs[0].Error(); strings.Count(got, sub) != 1 {
		t.Errorf("error %q should name the file once", got)
	}
}

func TestFiles(t *testing.T) {
	got := Files("/home/u", "/src/p")
	want := []string{"/home/u/.bingo/settings.json", "/src/p/.bingo/settings.json"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Files = %v, want %v", got, want)
	}
	if got := Files("/home/u", ""); !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("Files without a project = %v", got)
	}
}

func TestIsEnvName(t *testing.T) {
	for s, want := range map[string]bool{
		"OPENAI_API_KEY": true, "_x": true, "a1": true,
		"": false, "1A": false, "sk-abc": false, "A B": false, "A=B": false,
	} {
		if got := isEnvName(s); got != want {
			t.Errorf("isEnvName(%q) = %v", s, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"permissions": {"allow": ["a"]}, "turn": {"maxSteps": 2}}`))
	f.Add([]byte(`{"plugins": {"a": {"b": [1, {"c": null}]}}, "deadlines": {"tool": "1s"}}`))
	f.Add([]byte(`{"provider": {"openai": {"model": "m"}}, "sandbox": {"x": {"writable": true}}}`))
	f.Add([]byte(`{"env": {"withhold": ["A"], "plugins": {"d": {"withhold": ["B"], "pass": ["C"]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parse("f.json", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 || e.Col < 1 {
				t.Fatalf("unplaced error %v", err)
			}
			return
		}
		var s Settings
		s.apply(l) // must not panic
	})
}

// sandbox.require is the section's own key beside the plugins' names;
// a grant's paths and hosts are read as written.
func TestSandboxGrants(t *testing.T) {
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(`{"sandbox": {"require": true, "wc": {"read": ["~/.cache/x", "/opt/y"], "write": ["/tmp/z"], "network": ["registry.npmjs.org:443", "*"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, errs := Load(file)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := Sandbox{Read: []string{"~/.cache/x", "/opt/y"}, Write: []string{"/tmp/z"}, Network: []string{"registry.npmjs.org:443", "*"}}
	if !s.SandboxRequire || !reflect.DeepEqual(s.Sandbox["wc"], want) {
		t.Errorf("require %v, sandbox.wc %+v; want true, %+v", s.SandboxRequire, s.Sandbox["wc"], want)
	}
	if _, ok := s.Sandbox["require"]; ok {
		t.Error("sandbox.require was read as a plugin's grant")
	}
}
