package bridge

import (
	"strings"
	"testing"
	"time"

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
	e := mustStart(t, s, func(o *Options) {
		o.Redeclared = func(d protocol.InitializeResult, _ bool) { redecl.Add(d) }
	})
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

// A plugin may send plugin/declare any number of times: a flood of them
// costs the notices of the plugin's own rate (NoticeBurst, then a summary),
// and the host hears only of a change (Redeclared), not of each repeat;
// and none of it is a handshake's (Redeclared's handshake), for a cache to
// keep.
func TestRedeclareFloodIsBounded(t *testing.T) {
	const n = 500
	redecl := testutil.NewCollector[protocol.InitializeResult]()
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			d := basicDecl()
			d.Tools = append(d.Tools, sdk.ToolSpec{Name: "more", Description: "more"}, sdk.ToolSpec{Name: "bad name", Description: "x"})
			for range n {
				p.notify(protocol.NotifyPluginDeclare, d) // the same, refusing the same part
			}
			other := d
			other.Name = "other"
			for range n {
				p.notify(protocol.NotifyPluginDeclare, other) // refused whole
			}
			d.Tools = d.Tools[:1]
			p.notify(protocol.NotifyPluginDeclare, d) // a change
			echoAnswer(p, m)
		}
		return true
	}}
	handshook := testutil.NewCollector[protocol.InitializeResult]()
	e := mustStart(t, s, func(o *Options) {
		o.Redeclared = func(d protocol.InitializeResult, handshake bool) {
			redecl.Add(d)
			if handshake {
				handshook.Add(d)
			}
		}
	})
	start := time.Now()
	if _, err := call(t, e.tool("plugin__t__echo"), t.Context(), "c1", nil); err != nil {
		t.Fatal(err) // answered after every plugin/declare was handled, in wire order
	}
	e.plugin.Close()
	elapsed := time.Since(start)
	if all := redecl.All(); len(all) != 2 || len(all[0].Tools) != 2 || len(all[1].Tools) != 1 {
		t.Errorf("Redeclared %d times, want twice: the first declaration and the change", len(all))
	}
	if n := len(handshook.All()); n != 0 {
		t.Errorf("Redeclared at a handshake %d times for plugin/declare alone, want never: the cache holds what handshakes declare", n)
	}
	lines := e.notices.All()
	if most := NoticeBurst + int(elapsed/NoticeEvery) + 2; len(lines) > most {
		t.Errorf("%d notices for %d plugin/declare in %v; the bound is %d", len(lines), 2*n+1, elapsed, most)
	}
	if len(lines) == 0 || !strings.Contains(lines[0].Message, "tools[2].name") {
		t.Errorf("notices %v, want the refused tool first", lines)
	}
	if got := strings.Count(e.log.String(), "bridge: notice not shown"); got == 0 {
		t.Errorf("no refusal reached the plugin's log past the rate")
	}
}
