package bridge

import (
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// plugin/declare: a declaration sent again is held to the handshake's
// rules; what is kept becomes the plugin's declaration and Redeclared is
// told; a part refused costs its notice; another name refuses it whole.
func TestRedeclare(t *testing.T) {
	redecl := testutil.NewCollector[protocol.InitializeResult]()
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			d := basicDecl()
			d.Tools = append(d.Tools, sdk.ToolSpec{Name: "more", Description: "more"}, sdk.ToolSpec{Name: "bad name", Description: "x"})
			p.notify(protocol.NotifyPluginDeclare, d)
			d.Name = "other"
			p.notify(protocol.NotifyPluginDeclare, d)
			p.raw(`{"jsonrpc":"2.0","method":"plugin/declare","params":[]}`)
			echoAnswer(p, m)
		}
		return true
	}}
	e := mustStart(t, s, func(o *Options) { o.Redeclared = redecl.Add })
	if _, err := call(t, e.tool("plugin__t__echo"), t.Context(), "c1", nil); err != nil {
		t.Fatal(err)
	}
	got := redecl.Next(t)
	var names []string
	for _, tl := range got.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,more" {
		t.Errorf("redeclared tools %v, want echo, more", names)
	}
	if d, _ := e.plugin.Declaration(); len(d.Tools) != 2 {
		t.Errorf("kept declaration %+v, want the new one", d.Tools)
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "tools[2].name") {
		t.Errorf("notice %+v, want the refused tool", n)
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "its new declaration was refused") || !strings.Contains(n.Message, `"other"`) {
		t.Errorf("notice %+v, want the other name refused", n)
	}
	e.log.WaitFor(t, "bridge: plugin/declare is not a declaration")
	if all := redecl.All(); len(all) != 1 {
		t.Errorf("Redeclared %d times, want once", len(all))
	}
	// The contributions follow the kept declaration.
	if cs := e.plugin.Contributions().Tools; len(cs) != 2 {
		t.Errorf("contributions %d tools, want 2", len(cs))
	}
}
