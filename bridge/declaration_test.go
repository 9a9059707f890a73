package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// declaring is a scripted plugin that answers initialize with decl, raw.
func declaring(decl string) script {
	s := echoScript()
	s.init = func(p *peer, m msg) { p.reply(m, json.RawMessage(decl)) }
	return s
}

func messages(n []Notice) []string {
	var out []string
	for _, x := range n {
		out = append(out, x.Message)
	}
	return out
}

// Each part of a declaration is held to the schema's rules and the host's:
// a bad entry is refused with one notice naming its path, the good ones
// are kept, and a key the declaration does not have is not silently
// nothing.
func TestDeclarationIsCheckedEntryByEntry(t *testing.T) {
	e := mustStart(t, declaring(`{"protocol":5,"name":"t","version":"1",
		"tool":[{"name":"misspelt","description":"d"}],
		"hook":[{"id":"misspelt","decide":["tool/before"]}],
		"tools":[{"name":"echo","description":"e"},{"name":"nodesc"}],
		"commands":[
			{"name":"ok","args":{"kind":"none"}},
			{"name":"noargs"},
			{"name":"x y","args":{"kind":"free"}},
			{"name":"/a/b","args":{"kind":"none"}},
			{"name":"a\nb","args":{"kind":"none"}},
			{"name":"a\u001b[31m","args":{"kind":"none"}},
			{"name":"`+strings.Repeat("a", 5000)+`","args":{"kind":"none"}},
			{"name":"typo","args":{"kind":"none"},"hnit":"h"}],
		"contributors":{"id":"x"},
		"hooks":[
			{"id":"good","decide":["tool/before"],"observe":["turn/end"]},
			{"id":"never","decide":["tool/after"]},
			{"id":"late","observe":["turn/ended"]}],
		"services":[{"key":"bingo.host"},{"key":"mine"},{"key":"mine"}]}`), nil)
	want := []string{
		`tools[1].description: required, but missing; tools[1] not offered`,
		`commands[1].args: required, but missing; commands[1] not offered`,
		`commands[2].name: "x y" does not match ^[A-Za-z0-9_-]+$; commands[2] not offered`,
		`commands[3].name: "/a/b" does not match ^[A-Za-z0-9_-]+$; commands[3] not offered`,
		`commands[4].name: "a\nb" does not match ^[A-Za-z0-9_-]+$; commands[4] not offered`,
		`commands[5].name: "a\x1b[31m" does not match ^[A-Za-z0-9_-]+$; commands[5] not offered`,
		`commands[6].name: 5000 characters long; at most 64; commands[6] not offered`,
		`unknown key commands[7].hnit ignored`,
		`contributors: want an array of objects, got an object; ignored`,
		`hooks[1].decide[0]: "tool/after" is not a decision point; the host offers "tool/before", "prompt/before"; hooks[1] not offered`,
		`hooks[2].observe[0]: "turn/ended" is not an observation point; the host offers "tool/after", "turn/end"; hooks[2] not offered`,
		`services[0].key: "bingo.host" is reserved for the host; services[0] not offered`,
		`services[2].key: "mine" is declared twice; services[2] not offered`,
		`unknown keys "hook", "tool" ignored; a declaration holds protocol, name, version, tools, commands, contributors, compactors, providers, hooks, services`,
	}
	if got := messages(e.notices.All()); !slices.Equal(got, want) {
		t.Fatalf("notices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c := e.plugin.Contributions()
	var kept []string
	for _, x := range c.Tools {
		kept = append(kept, x.Spec().Name)
	}
	for _, x := range c.Commands {
		kept = append(kept, "/"+x.Spec().Name)
	}
	for _, x := range c.Hooks {
		kept = append(kept, "hook "+x.ID())
	}
	for _, x := range c.Services {
		kept = append(kept, "service "+x.Key())
	}
	if want := []string{"plugin__t__echo", "/ok", "/typo", "hook good", "service mine"}; !slices.Equal(kept, want) || len(c.Contributors) != 0 {
		t.Fatalf("kept %q and %d contributors, want %q", kept, len(c.Contributors), want)
	}
	if len(e.notices.All()) != len(want) {
		t.Fatal("building the contributions again raised notices again")
	}
}

// What the plugin says it is must hold: the handshake fails, saying why.
func TestDeclarationIdentityMustHold(t *testing.T) {
	for decl, want := range map[string]string{
		`[]`:                        "answered initialize with an array, not a declaration",
		`{"protocol":5,"name":"t"}`: `answered initialize with a broken declaration: version: required, but missing`,
		`{"protocol":"5","name":"t","version":"1"}`: `answered initialize with a broken declaration: protocol: want an integer, got a string`,
		`{"protocol":5,"name":7,"version":"1"}`:     `answered initialize with a broken declaration: name: want a string, got 7`,
		`{"protocol":4,"name":"t"}`:                 "speaks protocol 4; this host speaks protocol 5 only",
		`{"protocol":5,"name":"u","version":"1"}`:   `answered the handshake as "u", but its manifest names it "t"`,
	} {
		_, err := start(t, declaring(decl), nil)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %s", decl, err, want)
		}
		// Only what the plugin says it is is an IdentityError: a broken
		// answer may be a broken start, not the plugin's files.
		var ie *IdentityError
		if identity := strings.Contains(want, "protocol 4") || strings.Contains(want, "as \"u\""); errors.As(err, &ie) != identity {
			t.Errorf("%s: err is an IdentityError: %v, want %v", decl, !identity, identity)
		}
	}
}

// A declaration of many bad entries is not as many notices.
func TestDeclarationNoticesAreBounded(t *testing.T) {
	var cmds []string
	for range 30 {
		cmds = append(cmds, `{"name":"x y","args":{"kind":"none"}}`)
	}
	e := mustStart(t, declaring(`{"protocol":5,"name":"t","version":"1","commands":[`+strings.Join(cmds, ",")+`]}`), nil)
	got := messages(e.notices.All())
	if len(got) != 21 || got[20] != "and 10 more parts of the declaration refused" {
		t.Fatalf("%d notices, the last %q", len(got), got[len(got)-1])
	}
}

// Every part of a good declaration is kept as declared: readDeclaration
// reads every key InitializeResult has, and takes none for unknown.
func TestDeclarationKeepsAGoodOneWhole(t *testing.T) {
	want := protocol.InitializeResult{
		Protocol: protocol.Version, Name: "t", Version: "1.2.3",
		Tools: []sdk.ToolSpec{{Name: "count", Description: "counts", InputSchema: json.RawMessage(`{"type":"object"}`),
			Traits: &sdk.ToolTraits{ReadOnly: true, Interrupt: sdk.InterruptCancel}}},
		Commands:     []sdk.CommandSpec{{Name: "wordcount", Hint: "h", Args: sdk.CommandArgs{Kind: sdk.ArgsFree, Hint: "<path>"}, Instant: true, Family: "plugin"}},
		Contributors: []protocol.ContributorDecl{{ID: "c", Description: "d"}},
		Compactors:   []protocol.CompactorDecl{{ID: "k", Description: "d"}},
		Providers:    []protocol.ProviderDecl{{ID: "p", Description: "d", Models: []string{"m"}}},
		Hooks:        []protocol.HookDecl{{ID: "h", Decide: []string{"tool/before", "prompt/before"}, Observe: []string{"tool/after", "turn/end"}}},
		Services:     []protocol.ServiceDecl{{Key: "s", Methods: []string{"m"}}},
	}
	// Every field set: a field added to InitializeResult and not read by
	// readDeclaration fails here.
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("set %s in this test", v.Type().Field(i).Name)
		}
	}
	raw, _ := json.Marshal(want)
	got, refused, err := readDeclaration("t", raw)
	if err != nil || len(refused) != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nrefused %q, err %v", got, refused, err)
	}
}

// What the host checks a hook's points against cannot be changed by an
// importer: writing to the lists sdk hands out leaves the next check as it
// was, so "tool/after" stays refused as a decision point.
func TestHookPointsCannotBeChangedByAnImporter(t *testing.T) {
	d := sdk.DecisionPoints()
	d[0] = sdk.ToolAfter
	o := sdk.ObservationPoints()
	o[0] = sdk.ToolBefore
	e := mustStart(t, declaring(`{"protocol":5,"name":"t","version":"1",
		"hooks":[{"id":"never","decide":["tool/after"]},{"id":"good","decide":["tool/before"],"observe":["tool/after"]}]}`), nil)
	want := []string{`hooks[0].decide[0]: "tool/after" is not a decision point; the host offers "tool/before", "prompt/before"; hooks[0] not offered`}
	if got := messages(e.notices.All()); !slices.Equal(got, want) {
		t.Fatalf("notices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if hooks := e.plugin.Contributions().Hooks; len(hooks) != 1 || hooks[0].ID() != "good" {
		t.Fatalf("kept %d hooks, want only \"good\"", len(hooks))
	}
}

// A declaration offers at most MaxContributions of a kind, the first ones,
// with one message for the rest.
func TestDeclarationCapsEachKind(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"protocol":5,"name":"t","version":"1","tools":[`)
	for i := range MaxContributions + 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"m%d","description":"","inputSchema":{"type":"object"}}`, i)
	}
	b.WriteString(`]}`)
	decl, refused, err := readDeclaration("t", json.RawMessage(b.String()))
	if err != nil || len(decl.Tools) != MaxContributions || decl.Tools[MaxContributions-1].Name != fmt.Sprintf("m%d", MaxContributions-1) {
		t.Fatalf("kept %d tools, %v", len(decl.Tools), err)
	}
	if want := fmt.Sprintf("tools: %d declared, and a plugin may offer at most %d of a kind; tools[%d] and after not offered", MaxContributions+10, MaxContributions, MaxContributions); len(refused) != 1 || refused[0] != want {
		t.Fatalf("refused %q", refused)
	}
}

// A budget counts each plugin's latest declaration once.
func TestDeclarationBudget(t *testing.T) {
	b := NewDeclarationBudget(100, "these plugins")
	for _, step := range []struct {
		plugin string
		n      int
		ok     bool
	}{{"a", 60, true}, {"b", 50, false}, {"a", 30, true}, {"b", 50, true}, {"c", 21, false}, {"c", 20, true}} {
		if err := b.Take(step.plugin, step.n); (err == nil) != step.ok {
			t.Fatalf("%s %d: %v", step.plugin, step.n, err)
		}
	}
	var nobody *DeclarationBudget
	if err := nobody.Take("a", 1<<30); err != nil {
		t.Fatal(err)
	}
}
