package check

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

func TestSample(t *testing.T) {
	cases := map[string]string{
		``: `{}`,
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`:                                       `{"path":"sample"}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":3},"b":{"type":"boolean"}},"required":["n","b"]}`:     `{"b":false,"n":3}`,
		`{"type":"object","properties":{"mode":{"enum":["fast","slow"]},"opt":{"type":"string"}},"required":["mode"]}`:        `{"mode":"fast"}`,
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["tags"]}`: `{"tags":["sample"]}`,
		`{"type":"object","properties":{"s":{"type":["null","string"],"minLength":8}},"required":["s"]}`:                      `{"s":"samplexx"}`,
		`{"type":"object","properties":{"o":{"properties":{"k":{"const":7}},"required":["k"]}},"required":["o"]}`:             `{"o":{"k":7}}`,
	}
	for schema, want := range cases {
		v, ok := sample(json.RawMessage(schema))
		got, _ := json.Marshal(v)
		if !ok || string(got) != want {
			t.Errorf("sample(%s) = %s, want %s", schema, got, want)
		}
	}
}

// The reference example conforms; everything it declares is called once.
func TestWordcountConforms(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	rep, err := Run(context.Background(), Options{Dir: "../../examples/plugins/wordcount", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, f := range rep.Findings {
		subjects = append(subjects, f.Subject)
		if f.Level == Fail {
			t.Errorf("%s: %s", f.Level, f)
		}
	}
	if !rep.Conforms {
		t.Error("wordcount does not conform")
	}
	got := strings.Join(subjects, ", ")
	for _, want := range []string{"tool count", "command /wordcount", "completion /wordcount", "tool/cancel (tool count)", "respawn", "stderr", "wire"} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding about %s in %s", want, got)
		}
	}
}

// A plugin flooding stdout while checked does not grow the checker past
// tapKeep: the lines past it are counted, and the report says they were
// not checked instead of vouching for every line.
func TestTheTapKeepsBoundedPluginOutput(t *testing.T) {
	c := &checker{rep: &Report{Findings: []Finding{}}, tap: &tap{}, stderr: &counter{}}
	blank := []byte(strings.Repeat(" ", tapKeep/2)) // wire skips blank lines: only the bound is at work
	for range 3 {
		c.tap.add("plugin", blank)
	}
	c.tap.add("host", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	kept := 0
	for _, l := range c.tap.lines {
		if l.from == "plugin" {
			kept += len(l.text)
		}
	}
	if kept > tapKeep || c.tap.dropped != 2 || len(c.tap.lines) != 2 {
		t.Fatalf("kept %d bytes of the plugin's lines (bound %d), dropped %d, %d lines in all; want 1 kept, 2 dropped, the host's line kept",
			kept, tapKeep, c.tap.dropped, len(c.tap.lines))
	}
	c.wire()
	var got []string
	for _, f := range c.rep.Findings {
		got = append(got, f.Level+" "+f.Subject+": "+f.Message)
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "warn wire: the plugin wrote more than 64 MiB on stdout while checked; its 2 lines past that were not checked") ||
		strings.Contains(all, "each one JSON-RPC message") {
		t.Errorf("findings:\n%s", all)
	}
}

// A schema's sizes are the plugin's to name: a sample that would be
// larger than sampleBudget is refused, not built, and a negative
// maxLength is no slice bound.
func TestSampleIsBounded(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"type":"string","minLength":1e15}},"required":["s"]}`,
		`{"type":"object","properties":{"a":{"type":"array","minItems":1e15}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"array","minItems":100,"items":{"type":"array","minItems":100,"items":{"type":"array","minItems":100}}}},"required":["a"]}`,
	} {
		if v, ok := sample(json.RawMessage(schema)); ok {
			b, _ := json.Marshal(v)
			t.Errorf("sample(%s) is %d bytes, want it refused", schema, len(b))
		}
	}
	v, ok := sample(json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","maxLength":-1}},"required":["s"]}`))
	if b, _ := json.Marshal(v); !ok || string(b) != `{"s":"sample"}` {
		t.Errorf("a negative maxLength: %s, %v", b, ok)
	}
}
