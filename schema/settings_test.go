package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

var generatedSettings = sync.OnceValues(GenerateSettings)

// settingsSchema compiles the generated settings schema (which also
// validates it against the draft 2020-12 meta-schema).
func settingsSchema(t *testing.T) *sjs.Schema {
	t.Helper()
	b, err := generatedSettings()
	if err != nil {
		t.Fatalf("GenerateSettings: %v", err)
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the settings schema is not JSON: %v", err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource(SettingsID, inst); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SettingsID)
	if err != nil {
		t.Fatalf("compiling the settings schema: %v", err)
	}
	return sch
}

func TestGeneratedSettingsSchemaIsCurrent(t *testing.T) {
	want, err := generatedSettings()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("settings.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("settings.json")
	if err != nil {
		t.Fatalf("%v: run go run ./schema/gen", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("schema/settings.json is not what GenerateSettings produces: run go run ./schema/gen (or make schema)")
	}
	for range 3 {
		again, err := GenerateSettings()
		if err != nil || !bytes.Equal(again, want) {
			t.Fatal("two runs of GenerateSettings differ")
		}
	}
}

// parserAccepts says whether bingo takes content as a user's settings
// file: the settings parser reads it, and the gate takes its patterns.
func parserAccepts(t *testing.T, content string) (bool, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, errs := settings.Load(f)
	if len(errs) > 0 {
		return false, errs[0].Error()
	}
	if _, err := gate.New(s.Permissions, nil); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Sample settings files, valid and not: the schema and bingo agree on each.
func TestSettingsSamples(t *testing.T) {
	sch := settingsSchema(t)
	for _, tc := range []struct {
		name, content string
		valid         bool
	}{
		{"empty object", `{}`, true},
		{"every section", `{
  "permissions": {"allow": ["plugin__wordcount__count"], "deny": ["plugin__evil__*"], "ask": ["*"]},
  "plugins":     {"wordcount": {"any": "json"}, "other": null, "list": [1, 2]},
  "deadlines":   {"tool": "60s", "hook": "150ms", "providerTotal": "10m", "grace": "1m30s", "initialize": "+2s", "command": ".5s"},
  "limits":      {"providerResponseMiB": 32},
  "sandbox":     {"wordcount-wasm": {"writable": false, "memoryMiB": 256}, "bare": {}},
  "provider":    {"plugin": "myplugin/fast"},
  "turn":        {"maxSteps": 20, "compactAt": 200000},
  "env":         {"withhold": ["AWS_SECRET_ACCESS_KEY"],
                  "plugins": {"deploy": {"withhold": ["GITHUB_TOKEN"], "pass": ["OPENAI_API_KEY"]}}}
}`, true},
		{"openai", `{"provider": {"openai": {"baseURL": "http://localhost:11434/v1", "model": "llama3.2"}}}`, true},
		{"openai with a key", `{"provider": {"openai": {"baseURL": "https://api.openai.com/v1", "model": "gpt-4o-mini", "apiKeyEnv": "OPENAI_API_KEY"}}}`, true},
		{"provider id with a slash", `{"provider": {"plugin": "a/b/c"}}`, true},
		{"empty provider", `{"provider": {}}`, true},

		{"not an object", `[]`, false},
		{"unknown top key", `{"permisions": {}}`, false},
		{"unknown permissions key", `{"permissions": {"alow": []}}`, false},
		{"pattern with a space", `{"permissions": {"allow": ["a b"]}}`, false},
		{"pattern with a star inside", `{"permissions": {"deny": ["plugin__*__x"]}}`, false},
		{"empty pattern", `{"permissions": {"ask": [""]}}`, false},
		{"patterns not an array", `{"permissions": {"allow": "a"}}`, false},
		{"unknown deadline", `{"deadlines": {"tools": "1s"}}`, false},
		{"duration without unit", `{"deadlines": {"tool": "60"}}`, false},
		{"duration as a number", `{"deadlines": {"tool": 60}}`, false},
		{"zero duration", `{"deadlines": {"hook": "0s"}}`, false},
		{"zero duration in parts", `{"deadlines": {"hook": "0h0m"}}`, false},
		{"negative duration", `{"deadlines": {"grace": "-1s"}}`, false},
		{"limit zero", `{"limits": {"providerResponseMiB": 0}}`, false},
		{"limit a string", `{"limits": {"providerResponseMiB": "32"}}`, false},
		{"limit a fraction", `{"limits": {"providerResponseMiB": 1.5}}`, false},
		{"unknown sandbox key", `{"sandbox": {"wc": {"memory": 1}}}`, false},
		{"sandbox grant not an object", `{"sandbox": {"wc": true}}`, false},
		{"writable a string", `{"sandbox": {"wc": {"writable": "yes"}}}`, false},
		{"provider both", `{"provider": {"plugin": "a/b", "openai": {"model": "m"}}}`, false},
		{"provider without an id", `{"provider": {"plugin": "a"}}`, false},
		{"provider with an empty id", `{"provider": {"plugin": "a/"}}`, false},
		{"unknown provider", `{"provider": {"anthropic": {}}}`, false},
		{"baseURL not a URL", `{"provider": {"openai": {"baseURL": "localhost:8080"}}}`, false},
		{"empty model", `{"provider": {"openai": {"model": ""}}}`, false},
		{"the key itself in apiKeyEnv", `{"provider": {"openai": {"apiKeyEnv": "sk-abc123"}}}`, false},
		{"empty apiKeyEnv", `{"provider": {"openai": {"apiKeyEnv": ""}}}`, false},
		{"unknown turn key", `{"turn": {"steps": 1}}`, false},
		{"maxSteps negative", `{"turn": {"maxSteps": -1}}`, false},
		{"compactAt null", `{"turn": {"compactAt": null}}`, false},
		{"env not an object", `{"env": ["A"]}`, false},
		{"unknown env key", `{"env": {"pass": []}}`, false},
		{"env name with a dash", `{"env": {"withhold": ["A", "B-C"]}}`, false},
		{"env name starting with a digit", `{"env": {"plugins": {"d": {"pass": ["1BAD"]}}}}`, false},
		{"unknown env plugin key", `{"env": {"plugins": {"deploy": {"allow": []}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemaErr := validate(sch, []byte(tc.content))
			if (schemaErr == nil) != tc.valid {
				t.Errorf("the schema says %v, want valid=%v", schemaErr, tc.valid)
			}
			if ok, why := parserAccepts(t, tc.content); ok != tc.valid {
				t.Errorf("bingo accepts=%v (%s), want valid=%v", ok, why, tc.valid)
			}
		})
	}
}

// Every key of the table is in the schema: set to its example and to its
// default it is valid, and every section refuses a key it does not hold.
func TestSettingsSchemaHasEveryKey(t *testing.T) {
	sch := settingsSchema(t)
	for _, k := range settings.KeySpecs() {
		values := []string{k.Example()}
		if k.Default != "" {
			if k.Kind == settings.KindDuration {
				values = append(values, `"`+k.Default+`"`)
			} else {
				values = append(values, k.Default)
			}
		}
		if k.Zero != "" {
			values = append(values, `"0"`)
		} else if k.Kind == settings.KindDuration {
			if err := validate(sch, []byte(k.File(`"0"`))); err == nil {
				t.Errorf("%s = \"0\": valid, but the key has no zero", k.Path)
			}
		}
		for _, v := range values {
			if err := validate(sch, []byte(k.File(v))); err != nil {
				t.Errorf("%s = %s: %v", k.Path, v, err)
			}
		}
		if k.Kind == settings.KindSection {
			if err := validate(sch, []byte(k.File(`{"zzz": 1}`))); err == nil {
				t.Errorf("%s: the schema takes an unknown key", k.Path)
			}
		}
	}
}

// The sandbox's default memory, which the table of keys states, is the
// wasm transport's.
func TestSandboxMemoryDefaultIsTheTransports(t *testing.T) {
	for _, k := range settings.KeySpecs() {
		if k.Path == "sandbox.<name>.memoryMiB" {
			if want := wasm.DefaultMemoryLimitMiB; k.Default != strconv.Itoa(want) {
				t.Errorf("sandbox.<name>.memoryMiB: default %q, the wasm transport's %d", k.Default, want)
			}
			return
		}
	}
	t.Fatal("no key sandbox.<name>.memoryMiB")
}
