package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ToolSearchTool is the host's tool through which the model finds the
// tools that turn.toolsMax left out of its requests.
const ToolSearchTool = "bingo__tool_search"

var toolSearchSpec = sdk.ToolSpec{Name: ToolSearchTool,
	Description: "Finds tools that are installed but not offered yet: there are more than fit. Give words of what you want to do or a tool's name; the answer lists the matching tools with their input schemas, and you can call them from your next response on.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words of the task, or a tool's name or part of it"}},"required":["query"]}`)}

// searchMost is how many tools one bingo__tool_search answer lists.
const searchMost = 10

// DefinitionSize is what one tool's definition costs a model request, in
// bytes: its name, description and input schema as JSON, what
// turn.toolsMax counts.
func DefinitionSize(spec sdk.ToolSpec) int {
	b, _ := json.Marshal(sdk.ToolSpec{Name: spec.Name, Description: spec.Description, InputSchema: spec.InputSchema})
	return len(b)
}

// offerable is a tool the model may be offered: no deny rule covers it.
type offerable struct {
	spec  sdk.ToolSpec
	owner string
	size  int
}

// offerable lists the tools no deny rule covers, in name order: a denied
// tool is never offered, so the model does not spend a step calling it.
func (a *Agent) offerable() []offerable {
	var out []offerable
	for _, t := range a.cfg.Registry.Tools() {
		spec := t.Spec()
		if v, _ := a.cfg.Gate.Decide(spec.Name); v == gate.Deny {
			continue
		}
		out = append(out, offerable{spec: spec, owner: a.cfg.Registry.ToolOwner(spec.Name), size: DefinitionSize(spec)})
	}
	return out
}

// toolSpecs lists the tools a model request offers. Within turn.toolsMax
// bytes of definitions, every tool no deny rule covers. Past it: the
// tools the model found with bingo__tool_search this turn; then, while
// they fit, the tools the conversation called, latest first; then whole
// plugins, smallest first (a plugin's tools are offered all or none, so
// that a small plugin is never offered in part); and bingo__tool_search
// for the rest. bingo__read_result joins once a result was cut. a.mu is
// held.
func (a *Agent) toolSpecs() []sdk.ToolSpec {
	all := a.offerable()
	var builtins []sdk.ToolSpec
	if len(a.results) > 0 && a.builtinAllowed(ReadResultTool) {
		builtins = append(builtins, readResultSpec)
	}
	total := 0
	for _, t := range all {
		total += t.size
	}
	if total <= a.cfg.Turn.ToolsMax || !a.builtinAllowed(ToolSearchTool) {
		return append(specsOf(all, nil), builtins...)
	}
	left := a.cfg.Turn.ToolsMax - DefinitionSize(toolSearchSpec)
	offer := map[string]bool{}
	byName := map[string]offerable{}
	for _, t := range all {
		byName[t.spec.Name] = t
	}
	take := func(name string) {
		if t, ok := byName[name]; ok && !offer[name] {
			offer[name] = true
			left -= t.size
		}
	}
	for name := range a.found {
		take(name)
	}
	for _, name := range slices.Backward(a.used) {
		if t, ok := byName[name]; ok && t.size <= left {
			take(name)
		}
	}
	plugins := map[string]int{}
	for _, t := range all {
		if !offer[t.spec.Name] {
			plugins[t.owner] += t.size
		}
	}
	owners := make([]string, 0, len(plugins))
	for o := range plugins {
		owners = append(owners, o)
	}
	slices.SortFunc(owners, func(x, y string) int { return cmp.Or(cmp.Compare(plugins[x], plugins[y]), cmp.Compare(x, y)) })
	for _, o := range owners {
		if plugins[o] > left {
			break
		}
		for _, t := range all {
			if t.owner == o {
				take(t.spec.Name)
			}
		}
	}
	return append(append(specsOf(all, offer), toolSearchSpec), builtins...)
}

// specsOf returns the specs of the tools in only (every one when only is
// nil), in their order.
func specsOf(ts []offerable, only map[string]bool) []sdk.ToolSpec {
	var out []sdk.ToolSpec
	for _, t := range ts {
		if only == nil || only[t.spec.Name] {
			out = append(out, t.spec)
		}
	}
	return out
}

// builtinAllowed reports whether the host's own tool name may be offered
// and run: only a deny rule keeps it out (the built-ins read only what
// bingo holds, so no rule need allow them).
func (a *Agent) builtinAllowed(name string) bool {
	v, _ := a.cfg.Gate.Decide(name)
	return v != gate.Deny
}

// searchTools answers bingo__tool_search: the tools (no deny rule covering
// them) that match the query best, at most searchMost, each with its
// definition. They are offered from the turn's next model request on.
// a.mu is held.
func (a *Agent) searchTools(input json.RawMessage) (sdk.ToolOutput, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(input, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return sdk.ToolOutput{}, fmt.Errorf("%s: want {\"query\": words of the task or a tool's name}", ToolSearchTool)
	}
	type match struct {
		t     offerable
		score int
	}
	var ms []match
	for _, t := range a.offerable() {
		if s := score(in.Query, t.spec); s > 0 {
			ms = append(ms, match{t, s})
		}
	}
	slices.SortFunc(ms, func(x, y match) int {
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.t.spec.Name, y.t.spec.Name))
	})
	if len(ms) == 0 {
		return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(fmt.Sprintf("No tool matches %q. Try other words, or part of a tool's name.", in.Query))}}, nil
	}
	ms = ms[:min(len(ms), searchMost)]
	if a.found == nil {
		a.found = map[string]bool{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching tools; each is offered to you from your next response on, to call by its name:\n", len(ms))
	for _, m := range ms {
		a.found[m.t.spec.Name] = true
		line, _ := json.Marshal(sdk.ToolSpec{Name: m.t.spec.Name, Description: m.t.spec.Description, InputSchema: schemaOf(m.t.spec)})
		b.Write(line)
		b.WriteByte('\n')
	}
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(b.String())}}, nil
}

// schemaOf is a spec's input schema, {"type":"object"} when it has none.
func schemaOf(spec sdk.ToolSpec) json.RawMessage {
	if len(spec.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return spec.InputSchema
}

// score is how well a tool matches a query: a query that is the tool's
// name, or the part after its plugin, wins outright; otherwise each word
// of the query found in the name counts three and in the description
// one, and a tool matching no word scores 0.
func score(query string, spec sdk.ToolSpec) int {
	q := strings.ToLower(strings.TrimSpace(query))
	name := strings.ToLower(spec.Name)
	if q == name || strings.HasSuffix(name, "__"+q) {
		return 1000
	}
	desc := strings.ToLower(spec.Description)
	s := 0
	for _, w := range strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' }) {
		if strings.Contains(name, w) {
			s += 3
		}
		if strings.Contains(desc, w) {
			s++
		}
	}
	return s
}

// builtin returns the host's own tool of that name, or nil.
func (a *Agent) builtin(name string) func(json.RawMessage) (sdk.ToolOutput, error) {
	switch name {
	case ToolSearchTool:
		return a.searchTools
	case ReadResultTool:
		return a.readResult
	}
	return nil
}

// callBuiltin runs one of the host's own tools. A deny rule covering it
// refuses the call as a plugin tool's would be; no other rule applies,
// and no hook is asked: it reads only what bingo itself holds. a.mu is
// held.
func (a *Agent) callBuiltin(call sdk.ToolCallRequest, run func(json.RawMessage) (sdk.ToolOutput, error)) (sdk.ToolOutput, error) {
	if v, rule := a.cfg.Gate.Decide(call.Name); v == gate.Deny {
		return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: "denied by " + rule}
	}
	input, err := objectInput(call.Input)
	var out sdk.ToolOutput
	if err == nil {
		out, err = run(input)
	}
	if err != nil {
		out = errorOutput(err)
	}
	return out, err
}
