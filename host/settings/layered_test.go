package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// layeredUser is the user's file the LoadLayered tests share.
const layeredUser = `{
  "permissions": {"allow": ["u_allow"], "deny": ["u_deny"]},
  "plugins": {"deploy": {"from": "user"}, "lint": {"from": "user"}},
  "sandbox": {"deploy": {"writable": true}, "wc": {"memoryMiB": 64}},
  "mcp": {"deploy": {"sampling": true}},
  "deadlines": {"tool": "30s"},
  "turn": {"maxSteps": 10},
  "provider": {"openai": {"baseURL": "https://api.example.com/v1", "model": "m", "apiKeyEnv": "KEY"}},
  "env": {"withhold": ["AWS"], "plugins": {"deploy": {"withhold": ["GH"], "pass": ["OPENAI"]}, "lint": {"pass": ["X"]}}}
}`

// loadLayered writes the user's and the project's file and loads them.
// The user's file alone must load as Load loads it, whatever the project.
func loadLayered(t *testing.T, user, project string, p Project) (Loaded, Settings) {
	t.Helper()
	dir := t.TempDir()
	userFile := write(t, dir, "user.json", user)
	if p.File == "" {
		p.File = write(t, dir, "project.json", project)
	}
	ld := LoadLayered(userFile, p)
	alone := loadOK(t, userFile)
	if !reflect.DeepEqual(ld.User, alone) {
		t.Errorf("User =\n%+v\nwant the user's file alone\n%+v", ld.User, alone)
	}
	return ld, alone
}

func TestLoadLayered(t *testing.T) {
	own := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		project  string
		trusted  bool
		own      map[string]bool
		lapsed   map[string]bool   // Project.Untrusted in a trusted project
		want     func(s *Settings) // how Settings differs from the user's file alone
		ignored  []string
		userOnly []string
		withheld []string
	}{
		{name: "untrusted allow ignored",
			project: `{"permissions": {"allow": ["p_allow"]}}`,
			ignored: []string{"permissions.allow"}},
		{name: "untrusted deny and ask applied",
			project: `{"permissions": {"deny": ["p_deny"], "ask": ["p_ask"]}}`,
			want: func(s *Settings) {
				s.Permissions.Deny = []string{"u_deny", "p_deny"}
				s.Permissions.Ask = []string{"p_ask"}
			}},
		{name: "untrusted deadlines ignored, shorter or longer: a repository must not make the person's hook miss its deadline",
			project: `{"deadlines": {"tool": "5s", "hook": "1ns", "command": "30s", "grace": "1s", "initialize": "1ns", "providerTotal": "1h", "idleStop": "0"}}`,
			ignored: []string{"deadlines.tool", "deadlines.hook", "deadlines.command", "deadlines.grace", "deadlines.initialize", "deadlines.providerTotal", "deadlines.idleStop"}},
		{name: "untrusted limits ignored, smaller or larger",
			project: `{"limits": {"providerResponseMiB": 8}}`,
			ignored: []string{"limits.providerResponseMiB"}},
		{name: "untrusted turn bounds ignored, smaller or larger",
			project: `{"turn": {"maxSteps": 5, "compactAt": 1}}`,
			ignored: []string{"turn.maxSteps", "turn.compactAt"}},
		{name: "untrusted provider plugin ignored",
			project: `{"provider": {"plugin": "evil/p"}}`,
			ignored: []string{"provider"}},
		{name: "untrusted provider openai ignored",
			project: `{"provider": {"openai": {"baseURL": "https://evil.example/v1"}}}`,
			ignored: []string{"provider"}},
		{name: "untrusted plugins applied to its own plugins only",
			project: `{"plugins": {"lint": {"from": "project"}, "mine": {"from": "project"}}}`,
			own:     own("mine"),
			want:    func(s *Settings) { s.Plugins["mine"] = json.RawMessage(`{"from": "project"}`) },
			ignored: []string{"plugins.lint"}},
		{name: "untrusted own plugin does not get the user's config, sandbox or pass",
			project: `{"plugins": {"lint": {"from": "project"}}}`,
			own:     own("absent", "deploy", "lint"),
			want: func(s *Settings) {
				delete(s.Plugins, "deploy")
				s.Plugins["lint"] = json.RawMessage(`{"from": "project"}`)
				delete(s.Sandbox, "deploy")
				delete(s.MCP, "deploy")
				s.Env.Plugins["deploy"] = PluginEnv{Withhold: []string{"GH"}} // withhold only narrows: kept
				s.Env.Plugins["lint"] = PluginEnv{}
			},
			withheld: []string{"plugins.deploy", "sandbox.deploy", "mcp.deploy", "env.plugins.deploy", "plugins.lint", "env.plugins.lint"}},
		{name: "untrusted own false is not own",
			project: `{"plugins": {"deploy": {"from": "project"}}}`,
			own:     map[string]bool{"deploy": false},
			ignored: []string{"plugins.deploy"}},
		{name: "untrusted sandbox and env are user only",
			project:  `{"sandbox": {"wc": {"writable": true}, "x": {}}, "env": {"plugins": {"deploy": {"pass": ["AWS"]}}}}`,
			userOnly: []string{"sandbox", "env"}},
		{name: "mcp is user only, trusted or not",
			project:  `{"mcp": {"wc": {"sampling": true}, "deploy": {"resources": true}}}`,
			userOnly: []string{"mcp"}},
		{name: "mcp is user only in a trusted project too",
			trusted:  true,
			project:  `{"mcp": {"wc": {"sampling": true}}}`,
			userOnly: []string{"mcp"}},
		{name: "untrusted empty objects set nothing",
			project: `{"sandbox": {}, "env": {}, "provider": {}, "plugins": {}, "permissions": {}}`},
		{name: "untrusted keys reported in file order without repeats",
			project: `{"turn": {"maxSteps": 50}, "provider": {"plugin": "a/b"}, "permissions": {"allow": ["a"], "deny": ["d"]},
			           "env": {"withhold": ["A"], "plugins": {}}, "deadlines": {"tool": "1m"}, "sandbox": {"a": {}}, "plugins": {"x": 1}}`,
			want:     func(s *Settings) { s.Permissions.Deny = []string{"u_deny", "d"} },
			ignored:  []string{"turn.maxSteps", "provider", "permissions.allow", "deadlines.tool", "plugins.x"},
			userOnly: []string{"env", "sandbox"}},
		{name: "trusted applies as Load's second file but for sandbox and env",
			trusted: true,
			own:     own("deploy"),
			project: `{
  "permissions": {"allow": ["p_allow"], "ask": ["p_ask"]},
  "plugins": {"lint": {"from": "project"}, "new": 1},
  "sandbox": {"wc": {"writable": true}},
  "deadlines": {"tool": "90s", "hook": "1s"},
  "turn": {"maxSteps": 50},
  "provider": {"openai": {"model": "big"}},
  "env": {"plugins": {"deploy": {"pass": ["AWS"]}}}
}`,
			want: func(s *Settings) {
				s.Permissions.Allow = []string{"u_allow", "p_allow"}
				s.Permissions.Ask = []string{"p_ask"}
				s.Plugins["lint"] = json.RawMessage(`{"from": "project"}`)
				s.Plugins["new"] = json.RawMessage(`1`)
				s.Deadlines.Tool, s.Deadlines.Hook = 90*time.Second, time.Second
				s.Turn.MaxSteps = 50
				s.Provider.OpenAI = &OpenAI{BaseURL: "https://api.example.com/v1", Model: "big", APIKeyEnv: "KEY"}
			},
			userOnly: []string{"sandbox", "env"}},
		{name: "trusted project, but a plugin whose files changed gets none of the person's grants",
			trusted: true,
			own:     own("deploy", "lint"),
			lapsed:  map[string]bool{"deploy": true, "lint": false},
			want: func(s *Settings) {
				delete(s.Plugins, "deploy")
				delete(s.Sandbox, "deploy")
				delete(s.MCP, "deploy")
				s.Env.Plugins["deploy"] = PluginEnv{Withhold: []string{"GH"}}
			},
			withheld: []string{"plugins.deploy", "sandbox.deploy", "mcp.deploy", "env.plugins.deploy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Project{Trusted: tc.trusted, Own: tc.own, Untrusted: tc.lapsed}
			if !tc.trusted {
				p.Untrusted = tc.own // in an untrusted project no plugin is trusted
			}
			ld, want := loadLayered(t, layeredUser, tc.project, p)
			if len(ld.Errs) > 0 {
				t.Fatalf("Errs = %v", ld.Errs)
			}
			if tc.want != nil {
				tc.want(&want)
			}
			if !reflect.DeepEqual(ld.Settings, want) {
				t.Errorf("Settings =\n%+v\nwant\n%+v", ld.Settings, want)
			}
			for _, l := range []struct {
				name      string
				got, want []string
			}{
				{"Ignored", ld.Ignored, tc.ignored},
				{"UserOnly", ld.UserOnly, tc.userOnly},
				{"Withheld", ld.Withheld, tc.withheld},
			} {
				if !reflect.DeepEqual(l.got, l.want) {
					t.Errorf("%s = %q, want %q", l.name, l.got, l.want)
				}
			}
		})
	}
}

// With no project, or a project without a settings file, what is in
// force is the user's file.
func TestLoadLayeredNoProject(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "user.json", layeredUser)
	want := loadOK(t, user)
	for _, p := range []Project{{}, {File: dir + "/missing.json"}} {
		ld := LoadLayered(user, p)
		if !reflect.DeepEqual(ld.Settings, want) || !reflect.DeepEqual(ld.User, want) ||
			ld.Ignored != nil || ld.UserOnly != nil || ld.Withheld != nil || ld.Errs != nil {
			t.Errorf("LoadLayered(%+v) = %+v", p, ld)
		}
	}
}

// An untrusted project plugin does not inherit the person's grants for its
// name even when its project has no settings file at all.
func TestLoadLayeredWithholdsWithoutAProjectFile(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "user.json", `{"plugins": {"deploy": {"token": "t"}}, "sandbox": {"deploy": {"writable": true}}}`)
	for _, file := range []string{"", dir + "/missing.json"} {
		ld := LoadLayered(user, Project{File: file, Own: map[string]bool{"deploy": true}, Untrusted: map[string]bool{"deploy": true}})
		if _, ok := ld.Settings.Plugins["deploy"]; ok {
			t.Errorf("file %q: the person's config reached the untrusted plugin: %+v", file, ld.Settings.Plugins)
		}
		if _, ok := ld.Settings.Sandbox["deploy"]; ok {
			t.Errorf("file %q: the person's sandbox grant reached the untrusted plugin", file)
		}
		if want := []string{"plugins.deploy", "sandbox.deploy"}; !reflect.DeepEqual(ld.Withheld, want) {
			t.Errorf("file %q: Withheld = %q, want %q", file, ld.Withheld, want)
		}
	}
}

// A malformed file is one *Error and contributes nothing; the other still
// applies.
func TestLoadLayeredMalformed(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "good.json", `{"turn": {"maxSteps": 4}, "permissions": {"allow": ["a"]}}`)
	bad := write(t, dir, "bad.json", `{"turn": {"maxSteps": 3}, "permissions": {"alow": []}}`)

	ld := LoadLayered(good, Project{File: bad})
	if len(ld.Errs) != 1 || !strings.HasPrefix(ld.Errs[0].Error(), bad+":1:") {
		t.Fatalf("Errs = %v", ld.Errs)
	}
	if !reflect.DeepEqual(ld.Settings, ld.User) || ld.Settings.Turn.MaxSteps != 4 || ld.Ignored != nil {
		t.Errorf("part of the malformed project file applied: %+v, ignored %q", ld.Settings, ld.Ignored)
	}

	ld = LoadLayered(bad, Project{File: good, Trusted: true})
	if len(ld.Errs) != 1 || !strings.HasPrefix(ld.Errs[0].Error(), bad+":1:") {
		t.Fatalf("Errs = %v", ld.Errs)
	}
	if !reflect.DeepEqual(ld.User, Default()) {
		t.Errorf("part of the malformed user file applied: %+v", ld.User)
	}
	if ld.Settings.Turn.MaxSteps != 4 || !reflect.DeepEqual(ld.Settings.Permissions.Allow, []string{"a"}) {
		t.Errorf("the project file did not apply: %+v", ld.Settings)
	}
}

var errBadPattern = errors.New("a pattern may not hold **")

func validPattern(p string) error {
	if strings.Contains(p, "**") {
		return errBadPattern
	}
	return nil
}

// A bad pattern in the project file is dropped and reported where it is;
// the rest of the file applies. The user's patterns are not checked.
func TestLoadLayeredBadPattern(t *testing.T) {
	project := `{
  "permissions": {
    "allow": ["a**"],
    "deny": ["good", "x**"],
    "ask": [ "y**",
             "ok"]
  },
  "deadlines": {"tool": "1s"}
}`
	for _, trusted := range []bool{false, true} {
		dir := t.TempDir()
		user := write(t, dir, "user.json", `{"permissions": {"deny": ["u**"]}}`)
		file := write(t, dir, "project.json", project)
		ld := LoadLayered(user, Project{File: file, Trusted: trusted, ValidPattern: validPattern})

		want := []struct {
			line, col int
			msg       string
		}{
			{3, 15, `permissions.allow "a**": a pattern may not hold **; this pattern is ignored`},
			{4, 22, `permissions.deny "x**": a pattern may not hold **; this pattern is ignored`},
			{5, 14, `permissions.ask "y**": a pattern may not hold **; this pattern is ignored`},
		}
		if len(ld.Errs) != len(want) {
			t.Fatalf("trusted %v: Errs = %v", trusted, ld.Errs)
		}
		for i, w := range want {
			var e *Error
			if !errors.As(ld.Errs[i], &e) || e.File != file || e.Line != w.line || e.Col != w.col ||
				e.Err.Error() != w.msg || !errors.Is(e, errBadPattern) {
				t.Errorf("trusted %v: Errs[%d] = %v, want %s:%d:%d: %s", trusted, i, ld.Errs[i], file, w.line, w.col, w.msg)
			}
		}
		perms := Permissions{Deny: []string{"u**", "good"}, Ask: []string{"ok"}}
		if !reflect.DeepEqual(ld.Settings.Permissions, perms) {
			t.Errorf("trusted %v: Permissions = %+v, want %+v", trusted, ld.Settings.Permissions, perms)
		}
		if got := ld.Settings.Deadlines.Tool == time.Second; got != trusted {
			t.Errorf("trusted %v: deadlines.tool applied %v: %+v", trusted, got, ld.Settings.Deadlines)
		}
	}
}

// Past the first few, a file's bad patterns are one line saying how many,
// placed at the first of them; every bad one is still dropped.
func TestLoadLayeredManyBadPatterns(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"permissions": {"deny": ["good"`)
	for i := range 20000 {
		fmt.Fprintf(&b, ",\n\"x%d**\"", i)
	}
	b.WriteString("],\n\"ask\": [\"y**\", \"ok\"]}}")
	dir := t.TempDir()
	file := write(t, dir, "project.json", b.String())
	ld := LoadLayered(write(t, dir, "user.json", `{}`), Project{File: file, ValidPattern: validPattern})
	if len(ld.Errs) != shownInvalid+1 {
		t.Fatalf("%d errors, want %d: %v", len(ld.Errs), shownInvalid+1, ld.Errs[:min(len(ld.Errs), 10)])
	}
	for i, err := range ld.Errs[:shownInvalid] {
		if want := fmt.Sprintf(`%s:%d:1: permissions.deny "x%d**": a pattern may not hold **; this pattern is ignored`, file, i+2, i); err.Error() != want {
			t.Errorf("Errs[%d] = %v, want %s", i, err, want)
		}
	}
	if want := fmt.Sprintf("%s:%d:1: %d more permission patterns, from here on, are not valid either; they are ignored", file, shownInvalid+2, 20000+1-shownInvalid); ld.Errs[shownInvalid].Error() != want {
		t.Errorf("last error %v, want %s", ld.Errs[shownInvalid], want)
	}
	if perms := (Permissions{Deny: []string{"good"}, Ask: []string{"ok"}}); !reflect.DeepEqual(ld.Settings.Permissions, perms) {
		t.Errorf("Permissions = %+v, want %+v", ld.Settings.Permissions, perms)
	}
}

// Places stay right however the file's strings are laid out: many to a
// line, a line each, with characters of several bytes, and a mistake
// found after the parser has read past it (placed by counting again).
func TestPlaceCountsOn(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"permissions": {"deny": [`)
	var want []place
	line, col := 1, 27
	for i := range 3000 {
		if i > 0 {
			b.WriteString(", ")
			col += 2
			if i%7 == 0 {
				b.WriteString("\n  ")
				line, col = line+1, 3
			}
		}
		want = append(want, place{line, col})
		s := fmt.Sprintf(`"é%d"`, i)
		b.WriteString(s)
		col += utf8.RuneCountInString(s)
	}
	b.WriteString("]}}")
	l, err := parse("f.json", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.patternAt["permissions.deny"]; !reflect.DeepEqual(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("pattern %d at %v, want %v", i, got[i], want[i])
			}
		}
	}
	p := &parser{data: []byte("ab\ncdé\nf"), last: place{1, 1}}
	for _, c := range []struct {
		off  int64
		want place
	}{{7, place{2, 4}}, {8, place{3, 1}}, {1, place{1, 2}}, {4, place{2, 2}}, {100, place{3, 2}}} {
		if got := p.place(c.off); got != c.want {
			t.Errorf("place(%d) = %v, want %v", c.off, got, c.want)
		}
	}
}

// ReadUser reads the user's file once: its Settings, which the host needs
// before it knows how far it trusts a project (the environment rule), are
// LoadLayered's User; a file not applied is Default, and its error is
// reported once by Layered.
func TestReadUserIsLoadLayeredsUser(t *testing.T) {
	dir := t.TempDir()
	file := write(t, dir, "user.json", layeredUser)
	u := ReadUser(file)
	if got, want := u.Settings(), LoadLayered(file, Project{}).User; !reflect.DeepEqual(got, want) {
		t.Errorf("ReadUser.Settings = %+v\nLoadLayered.User = %+v", got, want)
	}
	if env := u.Settings().Env; len(env.Withhold) == 0 {
		t.Errorf("the user's env rule was not read: %+v", env)
	}
	bad := ReadUser(write(t, dir, "bad.json", `{"env": `))
	if !reflect.DeepEqual(bad.Settings(), Default()) {
		t.Errorf("a file not applied gives %+v, want Default", bad.Settings())
	}
	if ld := bad.Layered(Project{}); len(ld.Errs) != 1 || len(ld.Skipped) != 1 {
		t.Errorf("Layered over a broken user file: errs %v, skipped %v", ld.Errs, ld.Skipped)
	}
}
