package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// fakeTool is an in-process tool of a given definition.
type fakeTool struct{ spec sdk.ToolSpec }

func (f fakeTool) Spec() sdk.ToolSpec   { return f.spec }
func (fakeTool) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }
func (f fakeTool) Call(context.Context, sdk.ToolCall, sdk.CallUI) (sdk.ToolOutput, error) {
	return sdk.ToolOutput{}, nil
}

// toolAgent is an agent over plugins named by the keys of tools, each
// with that many tools of about 100 bytes (plugin__P__tN), under deny.
func toolAgent(t *testing.T, toolsMax int, deny []string, tools map[string]int) *Agent {
	t.Helper()
	reg := registry.New(nil, nil)
	for owner, n := range tools {
		for i := range n {
			name := "plugin__" + owner + "__t" + string(rune('a'+i))
			reg.AddTool(owner, fakeTool{sdk.ToolSpec{Name: name, Description: strings.Repeat("d", 40), InputSchema: json.RawMessage(`{"type":"object"}`)}})
		}
	}
	g, err := gate.New(settings.Permissions{Deny: deny}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Agent{cfg: Config{Registry: reg, Gate: g, Turn: settings.Turn{ToolsMax: toolsMax}}}
}

func names(specs []sdk.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestToolSpecsWithinTheBudgetOfferAllButDenied(t *testing.T) {
	a := toolAgent(t, 100000, []string{"plugin__p__tb"}, map[string]int{"p": 3})
	if got := names(a.toolSpecs()); !slices.Equal(got, []string{"plugin__p__ta", "plugin__p__tc"}) {
		t.Fatalf("offered %v", got)
	}
}

func TestToolSpecsPastTheBudget(t *testing.T) {
	one := DefinitionSize(sdk.ToolSpec{Name: "plugin__big__ta", Description: strings.Repeat("d", 40), InputSchema: json.RawMessage(`{"type":"object"}`)})
	// Room for the search tool and three tools: small (2 tools) fits
	// whole, tiny (1) too, big (5) never.
	budget := DefinitionSize(toolSearchSpec) + 3*one + one/2
	a := toolAgent(t, budget, nil, map[string]int{"big": 5, "small": 2, "tiny": 1})
	got := names(a.toolSpecs())
	if want := []string{"plugin__small__ta", "plugin__small__tb", "plugin__tiny__ta", ToolSearchTool}; !slices.Equal(got, want) {
		t.Fatalf("offered %v, want %v: the smallest plugins whole, then the search", got, want)
	}

	// A tool the conversation called comes first, within the budget;
	// what is left goes to whole plugins, smallest first.
	a.used = []string{"plugin__big__tc"}
	got = names(a.toolSpecs())
	if want := []string{"plugin__big__tc", "plugin__tiny__ta", ToolSearchTool}; !slices.Equal(got, want) {
		t.Fatalf("offered %v, want %v", got, want)
	}

	// What the model found is offered, even past the budget.
	out, err := a.searchTools(json.RawMessage(`{"query": "te"}`))
	if err != nil || !strings.HasPrefix(out.Text(), "1 matching tools;") || !strings.Contains(out.Text(), `"name":"plugin__big__te","description":"dddd`) ||
		!strings.Contains(out.Text(), `"inputSchema":{"type":"object"}`) {
		t.Fatalf("search: %q %v", out.Text(), err)
	}
	got = names(a.toolSpecs())
	if !slices.Contains(got, "plugin__big__te") || !slices.Contains(got, "plugin__big__tc") {
		t.Fatalf("offered %v: the found and the used tools must be", got)
	}

	// A deny rule keeps the search itself out, and every tool is offered.
	a = toolAgent(t, budget, []string{"bingo__*"}, map[string]int{"big": 5})
	if got := names(a.toolSpecs()); len(got) != 5 || slices.Contains(got, ToolSearchTool) {
		t.Fatalf("offered %v", got)
	}
	if _, err := a.callBuiltin(sdk.ToolCallRequest{Name: ToolSearchTool, Input: json.RawMessage(`{"query":"x"}`)}, a.searchTools); err == nil {
		t.Fatal("a denied built-in must not run")
	}
}

func TestToolSearchMatches(t *testing.T) {
	a := toolAgent(t, 1, []string{"plugin__q__*"}, map[string]int{"p": 3, "q": 3})
	for query, want := range map[string]string{
		"plugin__p__ta": "1 matching tools;",
		"TB":            "1 matching tools;", // the part after the plugin, in any case
		"tc":            "1 matching tools;", // q's are denied: never found
		"nothing here":  `No tool matches "nothing here"`,
	} {
		out, err := a.searchTools(json.RawMessage(`{"query": "` + query + `"}`))
		if err != nil || !strings.HasPrefix(out.Text(), want) {
			t.Errorf("%q: %q %v, want %q", query, out.Text(), err, want)
		}
	}
	if _, err := a.searchTools(json.RawMessage(`{"query": " "}`)); err == nil {
		t.Error("an empty query must be refused")
	}
}
