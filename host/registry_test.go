package host

import (
	"reflect"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// replace swaps what one plugin contributes for its new declaration and
// leaves the others alone; a plugin not registered yet is left to add.
func TestRegistryReplace(t *testing.T) {
	n := testutil.NewCollector[bridge.Notice]()
	r := newRegistry(n.Add)
	contrib := func(plugin string, tools ...string) bridge.Contributions {
		var c bridge.Contributions
		for _, name := range tools {
			c.Tools = append(c.Tools, proxy.NewTool(nil, plugin, sdk.ToolSpec{Name: name}))
		}
		c.Commands = []*proxy.Command{proxy.NewCommand(nil, sdk.CommandSpec{Name: plugin + "-cmd"})}
		return c
	}
	r.add("mcp", contrib("mcp", "a", "b"))
	r.add("other", contrib("other", "x"))
	r.replace("mcp", contrib("mcp", "b", "c"))
	r.replace("later", contrib("later", "z"))

	var tools []string
	for _, tl := range r.Tools() {
		tools = append(tools, tl.Spec().Name)
	}
	if want := []string{"plugin__mcp__b", "plugin__mcp__c", "plugin__other__x"}; !reflect.DeepEqual(tools, want) {
		t.Errorf("tools %q, want %q", tools, want)
	}
	if want := []string{"mcp-cmd", "other-cmd"}; !reflect.DeepEqual(r.CommandNames(), want) {
		t.Errorf("commands %q, want %q", r.CommandNames(), want)
	}
	if all := n.All(); len(all) != 0 {
		t.Errorf("notices %v: a plugin's own old contributions are no clash", all)
	}
}
