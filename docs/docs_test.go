package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

const (
	pluginsDoc  = "plugins.md"
	settingsDoc = "settings.md"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wireSchema is the committed schema/plugin.json, compiled.
type wireSchema struct {
	c   *sjs.Compiler
	doc map[string]any
}

var loadWireSchema = sync.OnceValues(func() (*wireSchema, error) {
	b, err := os.ReadFile(filepath.Join("..", "schema", "plugin.json"))
	if err != nil {
		return nil, err
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := sjs.NewCompiler()
	if err := c.AddResource("plugin.json", inst); err != nil {
		return nil, err
	}
	s := &wireSchema{c: c}
	return s, json.Unmarshal(b, &s.doc)
})

func wire(t *testing.T) *wireSchema {
	t.Helper()
	s, err := loadWireSchema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *wireSchema) compile(t *testing.T, ref string) *sjs.Schema {
	t.Helper()
	sch, err := s.c.Compile("plugin.json" + ref)
	if err != nil {
		t.Fatalf("compiling %s: %v", ref, err)
	}
	return sch
}

// resultRef is the $ref of the result of a method in one of the schema's
// tables ("methods", or "hostService" for bingo.host's doors).
func (s *wireSchema) resultRef(table, method string) string {
	tab, _ := s.doc[table].(map[string]any)
	if table == "hostService" {
		tab, _ = tab["methods"].(map[string]any)
	}
	entry, _ := tab[method].(map[string]any)
	res, _ := entry["result"].(map[string]any)
	ref, _ := res["$ref"].(string)
	return ref
}

// Every name the code gives a hook point, a hook outcome, a method, a
// notification or a door of bingo.host is in plugins.md, and every
// settings key in settings.md, each `in backticks`.
func TestEveryNameIsInTheDocs(t *testing.T) {
	plugins, sets := read(t, pluginsDoc), read(t, settingsDoc)
	want := func(doc, file, what, name string) {
		t.Helper()
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("%s: %s `%s` is not documented", file, what, name)
		}
	}
	for _, p := range slices.Concat(sdk.DecisionPoints(), sdk.ObservationPoints()) {
		want(plugins, pluginsDoc, "the hook point", p.String())
	}
	for _, o := range []sdk.HookOutcome{sdk.HookContinue, sdk.HookDeny, sdk.HookAsk, sdk.HookBlock, sdk.HookRedirect} {
		want(plugins, pluginsDoc, "the hook outcome", string(o))
	}
	// The schema's enum of outcomes is the Go tag's: an outcome added
	// there and not above fails here.
	def := wire(t).doc["$defs"].(map[string]any)["HookDecision"].(map[string]any)
	for _, o := range def["properties"].(map[string]any)["outcome"].(map[string]any)["enum"].([]any) {
		want(plugins, pluginsDoc, "the hook outcome", o.(string))
	}
	for _, prefix := range []string{"Method", "Notify", "Host"} {
		for name, v := range testutil.ProtocolConstants(t, prefix) {
			want(plugins, pluginsDoc, "protocol."+name+", the wire name", v)
		}
	}
	for _, key := range settings.Keys() {
		want(sets, settingsDoc, "the settings key", key)
	}
}

// settingsRows returns the rows of settings.md's key tables, by key: the
// cells after the key.
func settingsRows(t *testing.T) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	for _, line := range strings.Split(read(t, settingsDoc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		key := strings.Trim(cells[0], "`")
		if _, dup := rows[key]; dup {
			t.Errorf("%s: two rows for `%s`", settingsDoc, key)
		}
		rows[key] = cells[1:]
	}
	return rows
}

// settings.md's tables state every key's type, unit, default and layers as
// package settings does, and no key it does not have.
func TestSettingsTablesAreTheKeys(t *testing.T) {
	rows := settingsRows(t)
	dash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	known := map[string]bool{}
	for _, k := range settings.KeySpecs() {
		known[k.Path] = true
		cells, ok := rows[k.Path]
		if !ok {
			t.Errorf("%s: no table row for `%s` (| `%s` | %s | %s | %s | %s | what it does |)", settingsDoc, k.Path, k.Path, k.Kind, dash(k.Unit), dash(k.Default), dash(string(k.Layer)))
			continue
		}
		if len(cells) < 5 {
			t.Errorf("%s: the row of `%s` has %d cells, want type, unit, default, layers and what it does", settingsDoc, k.Path, len(cells))
			continue
		}
		for i, c := range []struct{ what, want string }{
			{"type", string(k.Kind)}, {"unit", dash(k.Unit)}, {"default", dash(k.Default)}, {"layers", dash(string(k.Layer))},
		} {
			if cells[i] != c.want {
				t.Errorf("%s: `%s` says %s %q; package settings says %q", settingsDoc, k.Path, c.what, cells[i], c.want)
			}
		}
	}
	for key := range rows {
		if !known[key] {
			t.Errorf("%s: a row for `%s`, which is not a settings key", settingsDoc, key)
		}
	}
}

// Wherever a page writes a key with its default in parentheses,
// "`deadlines.tool` (1m)", the default is the one in force.
func TestDefaultsInTheDocsAreInForce(t *testing.T) {
	defaults := map[string]string{}
	for _, k := range settings.KeySpecs() {
		defaults[k.Path] = k.Default
	}
	re := regexp.MustCompile("`([a-zA-Z.<>]+)` \\(([^)]*)\\)")
	checked := 0
	for _, file := range []string{pluginsDoc, settingsDoc} {
		for _, m := range re.FindAllStringSubmatch(read(t, file), -1) {
			def, ok := defaults[m[1]]
			if !ok || def == "" {
				continue
			}
			checked++
			stated := m[2]
			if !strings.HasPrefix(stated, def) || (len(stated) > len(def) && stated[len(def)] != ' ') {
				t.Errorf("%s: %s says the default is %q; it is %s", file, m[0], stated, def)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no key written with its default: the pattern is stale, and the test checks nothing")
	}
}

// wireLine is one example line of a page.
type wireLine struct {
	line  int // in the file
	block int // which code block
	raw   string
	msg   struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
}

// wireLines returns every line of a page's code blocks that is a JSON-RPC
// message (it starts with { and names "jsonrpc").
func wireLines(t *testing.T, file string) []*wireLine {
	t.Helper()
	var out []*wireLine
	sc := bufio.NewScanner(strings.NewReader(read(t, file)))
	sc.Buffer(nil, 1<<20)
	in, block := false, 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			in = !in
			block++
			continue
		}
		if !in || !strings.HasPrefix(line, "{") || !strings.Contains(line, `"jsonrpc"`) {
			continue
		}
		w := &wireLine{line: n, block: block, raw: line}
		if err := json.Unmarshal([]byte(line), &w.msg); err != nil {
			t.Errorf("%s:%d: not JSON: %v", file, n, err)
			continue
		}
		out = append(out, w)
	}
	return out
}

// Every example line of plugins.md is a valid wire line (schema/plugin.json,
// generated from the host's Go types), every answer is a valid result of
// the request it answers (the line of the same id before it in its block),
// and every method has an example each way, every notification and door
// of bingo.host one.
func TestWireExamples(t *testing.T) {
	s := wire(t)
	root := s.compile(t, "")
	lines := wireLines(t, pluginsDoc)
	requests, answered, notified := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, w := range lines {
		inst, err := sjs.UnmarshalJSON(strings.NewReader(w.raw))
		if err == nil {
			err = root.Validate(inst)
		}
		if err != nil {
			t.Errorf("%s:%d: not a valid wire line: %v\n%s", pluginsDoc, w.line, err, w.raw)
			continue
		}
		if w.msg.Method != "" {
			door := ""
			if w.msg.Method == protocol.MethodServiceCall {
				var p protocol.ServiceCallParams
				if json.Unmarshal(w.msg.Params, &p) == nil && p.Key == protocol.HostServiceKey {
					door = p.Method
				}
			}
			name := w.msg.Method
			if door != "" {
				name = protocol.HostServiceKey + " " + door
			}
			if w.msg.ID == nil {
				notified[name] = true
			} else {
				requests[name] = true
			}
			continue
		}
		if w.msg.Result == nil {
			continue // an error answers any request
		}
		// The request this answers: the latest line before it in its
		// block with the same id and a method.
		var req *wireLine
		for j := i - 1; j >= 0 && lines[j].block == w.block; j-- {
			if lines[j].msg.Method != "" && lines[j].msg.ID != nil && bytes.Equal(lines[j].msg.ID, w.msg.ID) {
				req = lines[j]
				break
			}
		}
		if req == nil {
			t.Errorf("%s:%d: an answer (id %s) to no request shown before it in its block", pluginsDoc, w.line, w.msg.ID)
			continue
		}
		table, method, result := "methods", req.msg.Method, w.msg.Result
		name := method
		if method == protocol.MethodServiceCall {
			var p protocol.ServiceCallParams
			_ = json.Unmarshal(req.msg.Params, &p)
			if p.Key == protocol.HostServiceKey {
				var outer protocol.ServiceCallResult
				if err := json.Unmarshal(result, &outer); err != nil {
					t.Errorf("%s:%d: %v", pluginsDoc, w.line, err)
					continue
				}
				table, method, result, name = "hostService", p.Method, outer.Result, protocol.HostServiceKey+" "+p.Method
			}
		}
		answered[name] = true
		ref := s.resultRef(table, method)
		if ref == "" {
			continue // bingo.host notice: nothing to read
		}
		inst, err = sjs.UnmarshalJSON(bytes.NewReader(result))
		if err == nil {
			err = s.compile(t, ref).Validate(inst)
		}
		if err != nil {
			t.Errorf("%s:%d: not a valid result of %s: %v\n%s", pluginsDoc, w.line, name, err, w.raw)
		}
	}
	for _, v := range testutil.ProtocolConstants(t, "Method") {
		if !requests[v] || !answered[v] {
			t.Errorf("%s: %s has no example request and answer (request %v, answer %v)", pluginsDoc, v, requests[v], answered[v])
		}
	}
	for _, v := range testutil.ProtocolConstants(t, "Notify") {
		if !notified[v] {
			t.Errorf("%s: %s has no example line", pluginsDoc, v)
		}
	}
	for name, v := range testutil.ProtocolConstants(t, "Host") {
		if name == "HostServiceKey" {
			continue
		}
		if door := protocol.HostServiceKey + " " + v; !requests[door] || !answered[door] {
			t.Errorf("%s: %s has no example request and answer", pluginsDoc, door)
		}
	}
}

// shape is the set of paths of a JSON value's keys, "messages[].role",
// arrays merged. The insides of a tool's input and input schema are the
// tool's own, and left out.
func shape(t *testing.T, raw json.RawMessage) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("payload %s: %v", raw, err)
	}
	out := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := strings.TrimPrefix(path+"."+k, ".")
				out[p] = true
				if k != "input" && k != "inputSchema" {
					walk(p, e)
				}
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// recorder is a hook that keeps what it is shown, by point.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]json.RawMessage
}

func (r *recorder) ID() string { return "recorder" }
func (r *recorder) Decide(_ context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
	r.keep(ev)
	return sdk.HookDecision{Outcome: sdk.HookContinue}, nil
}
func (r *recorder) Observe(_ context.Context, ev sdk.HookEvent) { r.keep(ev) }
func (r *recorder) keep(ev sdk.HookEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := sdk.HookPoint{Site: ev.Site, Point: ev.Point}.String()
	r.seen[p] = append(r.seen[p], bytes.Clone(ev.Payload))
}

// A model that calls the tool "t" once, then answers.
type model struct{ calls int }

func (m *model) ID() string { return "model" }
func (m *model) Stream(_ context.Context, _ sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	m.calls++
	if m.calls == 1 {
		emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "Echoing."})
		emit(sdk.StreamEvent{Kind: sdk.EventToolCall, ToolCall: &sdk.ToolCallDelta{Index: 0, ID: "call_1", Name: "t", ArgumentsDelta: `{"text":"hi"}`}})
		return sdk.StreamEnd{StopReason: "tool_use"}, nil
	}
	emit(sdk.StreamEvent{Kind: sdk.EventText, Text: "It said hi."})
	return sdk.StreamEnd{StopReason: "end_turn"}, nil
}

type tool struct{}

func (tool) Spec() sdk.ToolSpec {
	return sdk.ToolSpec{Name: "t", Description: "Echoes its text.", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (tool) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }
func (tool) Call(context.Context, sdk.ToolCall, sdk.CallUI) (sdk.ToolOutput, error) {
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("hi")}, Display: &sdk.View{Kind: sdk.ViewText, Text: "hi"}}, nil
}

type notes struct{}

func (notes) ID() string { return "notes" }
func (notes) Contribute(context.Context, sdk.Query) ([]sdk.Piece, error) {
	return []sdk.Piece{{Title: "Project notes", Text: "Tests run with make test."}}, nil
}

type ui struct{}

func (ui) Progress(string, string)                                     {}
func (ui) Ask(context.Context, string, string) (string, error)         { return "", agent.ErrNoOneToAsk }
func (ui) Approve(context.Context, sdk.ToolCall, string) (bool, error) { return true, nil }
func (ui) Text(string)                                                 {}
func (ui) ToolResult(sdk.ToolCallRequest, sdk.ToolOutput, error)       {}

// The payloads plugins.md shows at each hook point have exactly the keys of
// those the host sends: a turn is run through an in-process host, with a
// hook at every point recording what it is shown.
func TestHookPayloadsAreWhatTheHostSends(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".bingo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".bingo", "settings.json"), []byte(`{"provider": {"plugin": "x/model"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var notices []string
	var mu sync.Mutex
	h, err := host.Open(context.Background(), host.Config{Home: home, Cwd: home, Allow: []string{"t"},
		Notify: func(n bridge.Notice) { mu.Lock(); notices = append(notices, n.String()); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{seen: map[string][]json.RawMessage{}}
	var decide, observe []string
	for _, p := range sdk.DecisionPoints() {
		decide = append(decide, p.String())
	}
	for _, p := range sdk.ObservationPoints() {
		observe = append(observe, p.String())
	}
	h.Registry().AddTool("", tool{})
	h.Registry().AddProvider("x", &model{})
	h.Registry().AddContributor("x", notes{})
	h.Registry().AddHook(registry.HookEntry{Owner: "x", Hook: rec, Decide: decide, Observe: observe})
	res, err := h.Turn(context.Background(), "say hi", ui{})
	h.Close()
	if err != nil || res.Steps != 2 {
		t.Fatalf("the turn: %+v, %v; notices %q", res, err, notices)
	}

	// What the host sent validates, point by point, against the payload
	// schema/plugin.json states for the point.
	s := wire(t)
	for _, l := range []struct {
		def    string
		points []sdk.HookPoint
	}{{"HookDecideParams", sdk.DecisionPoints()}, {"HookObserve", sdk.ObservationPoints()}} {
		sch := s.compile(t, "#/$defs/"+l.def)
		for _, at := range l.points {
			for _, raw := range rec.seen[at.String()] {
				params, err := json.Marshal(protocol.HookObserve{ID: "recorder", Site: at.Site, Point: at.Point, Payload: raw})
				if err != nil {
					t.Fatal(err)
				}
				inst, err := sjs.UnmarshalJSON(bytes.NewReader(params))
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(inst); err != nil {
					t.Errorf("the host's %s payload does not validate against %s: %s\n%v", at, l.def, raw, err)
				}
			}
		}
	}

	documented := map[string]int{}
	for _, w := range wireLines(t, pluginsDoc) {
		if w.msg.Method != protocol.MethodHookDecide && w.msg.Method != protocol.NotifyHookObserve {
			continue
		}
		var p protocol.HookObserve
		if err := json.Unmarshal(w.msg.Params, &p); err != nil {
			t.Fatalf("%s:%d: %v", pluginsDoc, w.line, err)
		}
		point := sdk.HookPoint{Site: p.Site, Point: p.Point}.String()
		sent := map[string]bool{}
		for _, raw := range rec.seen[point] {
			for k := range shape(t, raw) {
				sent[k] = true
			}
		}
		if len(sent) == 0 {
			t.Errorf("%s:%d: the host sent nothing at %s", pluginsDoc, w.line, point)
			continue
		}
		documented[point]++
		shown := shape(t, p.Payload)
		var missing, extra []string
		for _, k := range sortedKeys(sent) {
			if !shown[k] {
				missing = append(missing, k)
			}
		}
		for _, k := range sortedKeys(shown) {
			if !sent[k] {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra) > 0 {
			t.Errorf("%s:%d: the %s payload shown lacks %q and has %q, which the host does not send", pluginsDoc, w.line, point, missing, extra)
		}
	}
	for _, p := range slices.Concat(sdk.DecisionPoints(), sdk.ObservationPoints()) {
		if documented[p.String()] == 0 {
			t.Errorf("%s: no example payload of %s", pluginsDoc, p)
		}
	}

}

// Every ```json block of settings.md is a settings file bingo takes, and
// valid against schema/settings.json.
func TestSettingsExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "schema", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource("settings.json", inst); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(read(t, settingsDoc), "\n") {
		switch {
		case cur == nil && line == "```json":
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no json example", settingsDoc)
	}
	for _, block := range blocks {
		f := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(f, []byte(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, errs := settings.Load(f); len(errs) > 0 {
			t.Errorf("%s: bingo refuses the example: %v\n%s", settingsDoc, errs, block)
		}
		inst, err := sjs.UnmarshalJSON(strings.NewReader(block))
		if err == nil {
			err = sch.Validate(inst)
		}
		if err != nil {
			t.Errorf("%s: the example is not valid against schema/settings.json: %v\n%s", settingsDoc, err, block)
		}
	}
}

// settings.md's legend of the layers column explains exactly the layers
// the keys are taken from: one the code adds, or stops using, changes it.
func TestSettingsLayersAreExplained(t *testing.T) {
	used := map[string]bool{}
	for _, k := range settings.KeySpecs() {
		if k.Layer != "" { // an object of keys, each with its own
			used[string(k.Layer)] = true
		}
	}
	explained := map[string]bool{}
	inLegend := false
	for _, line := range strings.Split(read(t, settingsDoc), "\n") {
		switch {
		case strings.HasPrefix(line, "| layers |"):
			inLegend = true
		case inLegend && strings.HasPrefix(line, "|---"):
		case inLegend && strings.HasPrefix(line, "| "):
			explained[strings.TrimSpace(strings.Split(strings.Trim(line, "|"), "|")[0])] = true
		default:
			inLegend = false
		}
	}
	for l := range used {
		if !explained[l] {
			t.Errorf("%s: the layers legend does not explain %q, which keys are taken from", settingsDoc, l)
		}
	}
	for l := range explained {
		if !used[l] {
			t.Errorf("%s: the layers legend explains %q, which no key has", settingsDoc, l)
		}
	}
	if len(explained) == 0 {
		t.Errorf("%s: no layers legend (| layers | the key is taken from |)", settingsDoc)
	}
}
