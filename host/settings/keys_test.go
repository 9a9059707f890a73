package settings

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The table is what the parser accepts: every key, set to a value of its
// kind, is read, and its default too; every section refuses a key the
// table does not list under it, and names the ones it does.
func TestKeysAreWhatTheParserAccepts(t *testing.T) {
	for _, k := range KeySpecs() {
		values := []string{k.Example()}
		if k.Default != "" {
			v := k.Default
			if k.Kind == KindDuration {
				v = `"` + v + `"`
			}
			values = append(values, v)
		}
		if k.Zero != "" {
			values = append(values, `"0"`)
		}
		for _, v := range values {
			f := k.File(v)
			l, err := parse("f.json", []byte(f))
			if err != nil {
				t.Errorf("%s = %s: the parser refuses it: %v", k.Path, v, err)
				continue
			}
			if top, _, _ := strings.Cut(k.Path, "."); top != k.Path && len(l.keys) != 1 && k.Requires == "" {
				t.Errorf("%s: the parser recorded keys %q, want one", k.Path, l.keys)
			}
		}
		if k.Kind != KindSection {
			continue
		}
		known := children(k.Path)
		f := k.File(`{"zzz": 1}`)
		_, err := parse("f.json", []byte(f))
		if want := "(known keys: " + strings.Join(known, ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: an unknown key: %v, want an error ending %s", k.Path, err, want)
		}
	}
	_, err := parse("f.json", []byte(`{"zzz": 1}`))
	if want := "(known keys: " + strings.Join(children(""), ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an unknown top key: %v, want an error ending %s", err, want)
	}
}

// Every key says what it is: a kind, a description, the files it is taken
// from, and a default where a value is always in force.
func TestEveryKeyIsDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range KeySpecs() {
		if seen[k.Path] {
			t.Errorf("%s is listed twice", k.Path)
		}
		seen[k.Path] = true
		if k.Kind == "" || strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%s has no kind or no description", k.Path)
		}
		if k.Layer == "" && k.Path != "permissions" {
			t.Errorf("%s says no layer it is taken from", k.Path)
		}
		if k.Layer != "" && k.Layer.Describe() == string(k.Layer) {
			t.Errorf("%s: layer %q has no description", k.Path, k.Layer)
		}
		switch k.Kind {
		case KindDuration, KindCount, KindBool:
			if k.Default == "" {
				t.Errorf("%s has no default", k.Path)
			}
		}
		if i := strings.LastIndexByte(k.Path, '.'); i >= 0 && !seen[k.Path[:i]] {
			t.Errorf("%s is listed before (or without) %s", k.Path, k.Path[:i])
		}
	}
	for _, key := range deadlineKeys {
		if deadlineDocs[key] == "" {
			t.Errorf("deadlines.%s: no entry in deadlineDocs", key)
		}
	}
	for _, key := range limitKeys {
		if limitDocs[key] == "" || limitUnits[key] == "" {
			t.Errorf("limits.%s: no entry in limitDocs or limitUnits", key)
		}
	}
	if got := Keys(); len(got) != len(seen) || got[0] != "permissions" {
		t.Errorf("Keys() = %q", got)
	}
}

// The defaults the table states are the ones in force.
func TestKeyDefaultsAreInForce(t *testing.T) {
	def := Default()
	for _, k := range KeySpecs() {
		top, key, _ := strings.Cut(k.Path, ".")
		var want string
		switch top {
		case "deadlines":
			if d := DeadlineField(&def.Deadlines, key); d != nil {
				want = formatDuration(*d)
				if got, err := time.ParseDuration(k.Default); err != nil || got != *d {
					t.Errorf("%s: default %q does not parse as %s", k.Path, k.Default, *d)
				}
			}
		default:
			continue
		}
		if k.Default != want {
			t.Errorf("%s: default %q, in force %q", k.Path, k.Default, want)
		}
	}
	for path, want := range map[string]int{"turn.maxSteps": def.Turn.MaxSteps, "turn.compactAt": def.Turn.CompactAt,
		"turn.toolResultMax": def.Turn.ToolResultMax, "turn.toolsMax": def.Turn.ToolsMax,
		"limits.providerResponseMiB": def.Limits.ProviderResponseMiB} {
		if k, _ := lookup(path); k.Default != strings.TrimSpace(string(must(json.Marshal(want)))) {
			t.Errorf("%s: default %q, in force %d", path, k.Default, want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 10 * time.Minute: "10m", 90 * time.Second: "90s", 2 * time.Second: "2s",
		150 * time.Millisecond: "150ms", 1500 * time.Millisecond: "1.5s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// The patterns stated for schema/settings.json accept what the parser
// accepts, and EnvNamePattern and ProviderPattern exactly that.
func TestPatternsAreTheParsers(t *testing.T) {
	env := regexp.MustCompile(EnvNamePattern)
	provider := regexp.MustCompile(ProviderPattern)
	names := []string{"", "A", "_", "a1", "1a", "A-B", "A B", "A=B", "É", "sk-abc", "OPENAI_API_KEY", "a/b", "/b", "a/", "a//b", "a/b/c", "a/\n", "\n/x", "é/ü"}
	for r := rune(0); r < 0x300; r++ {
		names = append(names, string(r), "A"+string(r), string(r)+"/x", "x/"+string(r))
	}
	for _, s := range names {
		if !utf8.ValidString(s) {
			continue
		}
		if got, want := env.MatchString(s), isEnvName(s); got != want {
			t.Errorf("EnvNamePattern on %q: %v, isEnvName %v", s, got, want)
		}
		_, _, ok := ProviderChoice{Plugin: s}.PluginProvider()
		if got := provider.MatchString(s); got != ok {
			t.Errorf("ProviderPattern on %q: %v, PluginProvider %v", s, got, ok)
		}
	}

	host := regexp.MustCompile(HostPattern)
	for _, s := range []string{"*", "*:443", "a:1", "registry.npmjs.org:443", "[::1]:8080", "[fe80::1%eth0]:1", "127.0.0.1:65535", "a:123456", "a:", ":80", "a b:1", "a:b", "[::1:80", "::1:80", "a:1x", "", "*:*"} {
		if got, want := host.MatchString(s), isHostPort(s); got != want {
			t.Errorf("HostPattern on %q: %v, isHostPort %v", s, got, want)
		}
	}

	dur, nonZero := regexp.MustCompile(DurationPattern), regexp.MustCompile(DurationNonZero)
	for _, s := range []string{"1s", "150ms", "1m30s", "1.5h", ".5s", "5.s", "+3s", "1us", "1µs", "1μs", "2ns", "1h2m3s4ms5us6ns", "0.001s",
		"60", "0", "0s", "-1s", "1x", "s", ".s", "1 s", " 1s", "1s ", "+-1s", "1.2.3s", "0h0m0s", "+0s"} {
		_, err := time.ParseDuration(s)
		d, _ := time.ParseDuration(s)
		parser := err == nil && d > 0
		schema := dur.MatchString(s) && nonZero.MatchString(s)
		if parser && !schema {
			t.Errorf("the parser accepts the duration %q, DurationPattern does not", s)
		}
		if !parser && schema {
			t.Errorf("DurationPattern accepts %q, which the parser refuses", s)
		}
	}
	url := regexp.MustCompile(URLPattern)
	for s, want := range map[string]bool{"https://api.openai.com/v1": true, "http://localhost:11434/v1": true, "HTTP://x": true,
		"localhost:8080": false, "ftp://x": false, "https://": false, "https:///v1": false} {
		if got := url.MatchString(s); got != want {
			t.Errorf("URLPattern on %q: %v, want %v", s, got, want)
		}
	}
}

// children reads a section's keys in the table's order, which is the order
// the parser's messages list them in.
func TestChildren(t *testing.T) {
	for parent, want := range map[string][]string{
		"":                   {"permissions", "plugins", "deadlines", "limits", "sandbox", "mcp", "provider", "turn", "wasmCompile", "untrustedWasm", "env"},
		"mcp.<name>":         {"resources", "sampling", "maxTokens"},
		"permissions":        {"allow", "deny", "ask"},
		"sandbox.<name>":     {"writable", "read", "write", "network", "memoryMiB"},
		"provider":           {"plugin", "model", "openai"},
		"env.plugins.<name>": {"withhold", "pass"},
		"deadlines":          deadlineKeys,
	} {
		if got := children(parent); !slices.Equal(got, want) {
			t.Errorf("children(%q) = %q, want %q", parent, got, want)
		}
	}
}
