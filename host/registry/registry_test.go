package registry

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// noticeLog collects notices; text is every notice, one a line.
type noticeLog struct {
	*testutil.Collector[bridge.Notice]
}

func newNoticeLog() noticeLog { return noticeLog{testutil.NewCollector[bridge.Notice]()} }

func (n noticeLog) text() string { return testutil.Lines(n.All()) }

// replace swaps what one plugin contributes for its new declaration and
// leaves the others alone; a plugin not registered yet is left to add.
func TestRegistryReplace(t *testing.T) {
	n := newNoticeLog()
	r := New(n.Add, nil)
	contrib := func(plugin string, tools ...string) bridge.Contributions {
		var c bridge.Contributions
		for _, name := range tools {
			c.Tools = append(c.Tools, proxy.NewTool(nil, plugin, sdk.ToolSpec{Name: name}))
		}
		c.Commands = []*proxy.Command{proxy.NewCommand(nil, sdk.CommandSpec{Name: plugin + "-cmd"})}
		return c
	}
	r.Add("mcp", contrib("mcp", "a", "b"))
	r.Add("other", contrib("other", "x"))
	r.Replace("mcp", contrib("mcp", "b", "c"))
	r.Replace("later", contrib("later", "z"))

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

// A replaced declaration keeps the rank rule: a name goes to the higher
// rank whatever the order of registration, and a name let go passes to
// the claim that lost it.
func TestReplaceKeepsTheRankRule(t *testing.T) {
	n := newNoticeLog()
	ranks := map[string]int{"mine": 1, "repo": 0}
	r := New(n.Add, func(o string) int { return ranks[o] })
	cmds := func(names ...string) bridge.Contributions {
		var c bridge.Contributions
		for _, name := range names {
			c.Commands = append(c.Commands, proxy.NewCommand(nil, sdk.CommandSpec{Name: name}))
		}
		return c
	}
	r.Add("mine", cmds("deploy"))
	r.Add("repo", cmds("deploy", "lint"))
	owner := func(name string) string {
		r.mu.RLock()
		defer r.mu.RUnlock()
		return r.commands[name].Owner
	}
	if owner("deploy") != "mine" || owner("lint") != "repo" {
		t.Fatalf("deploy %s, lint %s", owner("deploy"), owner("lint"))
	}
	// mine now declares lint, and no longer deploy.
	r.Replace("mine", cmds("lint"))
	if owner("deploy") != "repo" || owner("lint") != "mine" {
		t.Fatalf("after replace: deploy %s, lint %s; want repo, mine", owner("deploy"), owner("lint"))
	}
	if !strings.Contains(n.text(), `plugin repo: command "/lint" is now offered by plugin mine`) {
		t.Fatalf("notices: %s", n.text())
	}
	// The untrusted one redeclaring deploy and lint takes nothing from mine.
	r.Replace("repo", cmds("deploy", "lint"))
	if owner("deploy") != "repo" || owner("lint") != "mine" {
		t.Fatalf("after repo's replace: deploy %s, lint %s", owner("deploy"), owner("lint"))
	}
	// And when mine drops lint, repo's waiting claim takes it.
	r.Replace("mine", bridge.Contributions{})
	if owner("lint") != "repo" {
		t.Fatalf("lint let go went to %q", owner("lint"))
	}
}

// A plugin declaring again what it had changes nothing for anyone: a name
// it keeps never passes through the hands of a claim it beat (no reader
// sees it there, or missing), and no one is told of a clash again.
func TestReplaceWithTheSameNamesIsQuiet(t *testing.T) {
	n := newNoticeLog()
	ranks := map[string]int{"mine": 1, "repo": 0}
	r := New(n.Add, func(o string) int { return ranks[o] })
	deploy := bridge.Contributions{Commands: []*proxy.Command{proxy.NewCommand(nil, sdk.CommandSpec{Name: "deploy"})}}
	r.Add("mine", deploy)
	r.Add("repo", deploy)
	told := n.text()
	if !strings.Contains(told, "plugin repo") {
		t.Fatalf("the first clash was not told: %q", told)
	}

	done := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-done:
				return
			default:
			}
			r.mu.RLock()
			o, ok := r.commands["deploy"]
			r.mu.RUnlock()
			if !ok || o.Owner != "mine" {
				seen <- fmt.Sprintf("owner %q, present %v", o.Owner, ok)
				return
			}
		}
	}()
	for range 500 {
		r.Replace("mine", deploy)
		r.Replace("repo", deploy)
	}
	close(done)
	if bad, ok := <-seen; ok {
		t.Errorf("a reader saw deploy mid-replace: %s", bad)
	}
	if n.text() != told {
		t.Errorf("notices after declaring the same again:\n%s", strings.TrimPrefix(n.text(), told))
	}
}

func TestCommandClashFirstOwnerKeepsIt(t *testing.T) {
	n := newNoticeLog()
	r := New(n.Add, nil)
	own := proxy.NewCommand(nil, sdk.CommandSpec{Name: "compact"})
	r.AddCommand("", own)
	r.AddCommand("plugin-a", proxy.NewCommand(nil, sdk.CommandSpec{Name: "compact"})) // the host's own /compact wins
	if c, _ := r.Command("compact"); c != own || !strings.Contains(n.text(), `plugin plugin-a: command "/compact" is already offered by the host, which keeps it`) {
		t.Fatalf("notices = %s", n.text())
	}
}
