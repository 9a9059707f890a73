package gate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
)

func TestDecide(t *testing.T) {
	const wc = "plugin__wordcount__count"
	for _, tc := range []struct {
		name  string
		perms settings.Permissions
		flags []string
		// untrusted names plugins of an untrusted project.
		untrusted []string
		tool      string
		want      Decision
		rule      string
	}{
		{name: "no rules asks", tool: wc, want: Ask},
		{name: "exact allow", perms: settings.Permissions{Allow: []string{wc}}, tool: wc, want: Allow, rule: `permissions.allow "plugin__wordcount__count"`},
		{name: "exact allow is not a prefix", perms: settings.Permissions{Allow: []string{"plugin__wordcount__c"}}, tool: wc, want: Ask},
		{name: "exact allow does not match a longer name", perms: settings.Permissions{Allow: []string{wc}}, tool: wc + "2", want: Ask},
		{name: "exact allow is case-sensitive", perms: settings.Permissions{Allow: []string{"plugin__WordCount__count"}}, tool: wc, want: Ask},
		{name: "prefix allow", perms: settings.Permissions{Allow: []string{"plugin__wordcount__*"}}, tool: wc, want: Allow, rule: `permissions.allow "plugin__wordcount__*"`},
		{name: "prefix allow, other plugin", perms: settings.Permissions{Allow: []string{"plugin__wordcount__*"}}, tool: "plugin__wordcounter__count", want: Ask},
		{name: "prefix matches the bare prefix", perms: settings.Permissions{Allow: []string{"plugin__x__*"}}, tool: "plugin__x__", want: Allow, rule: `permissions.allow "plugin__x__*"`},
		{name: "star alone allows everything", perms: settings.Permissions{Allow: []string{"*"}}, tool: "anything", want: Allow, rule: `permissions.allow "*"`},
		{name: "star matches the empty name", perms: settings.Permissions{Deny: []string{"*"}}, tool: "", want: Deny, rule: `permissions.deny "*"`},
		{name: "exact deny", perms: settings.Permissions{Deny: []string{wc}}, tool: wc, want: Deny, rule: `permissions.deny "plugin__wordcount__count"`},
		{name: "exact ask", perms: settings.Permissions{Ask: []string{wc}}, tool: wc, want: Ask, rule: `permissions.ask "plugin__wordcount__count"`},
		{name: "--allow allows", flags: []string{wc}, tool: wc, want: Allow, rule: `--allow "plugin__wordcount__count"`},
		{name: "--allow prefix", flags: []string{"plugin__wordcount__*"}, tool: wc, want: Allow, rule: `--allow "plugin__wordcount__*"`},
		{name: "deny wins over allow",
			perms: settings.Permissions{Allow: []string{wc}, Deny: []string{"plugin__wordcount__*"}}, tool: wc, want: Deny, rule: `permissions.deny "plugin__wordcount__*"`},
		{name: "deny wins over --allow",
			perms: settings.Permissions{Deny: []string{"plugin__evil__*"}}, flags: []string{"plugin__evil__rm"}, tool: "plugin__evil__rm", want: Deny, rule: `permissions.deny "plugin__evil__*"`},
		{name: "deny wins over ask",
			perms: settings.Permissions{Ask: []string{wc}, Deny: []string{wc}}, tool: wc, want: Deny, rule: `permissions.deny "plugin__wordcount__count"`},
		{name: "deny * wins over exact allow",
			perms: settings.Permissions{Allow: []string{wc}, Deny: []string{"*"}}, tool: wc, want: Deny, rule: `permissions.deny "*"`},
		{name: "ask wins over allow",
			perms: settings.Permissions{Allow: []string{wc}, Ask: []string{"plugin__wordcount__*"}}, tool: wc, want: Ask, rule: `permissions.ask "plugin__wordcount__*"`},
		{name: "ask wins over --allow",
			perms: settings.Permissions{Ask: []string{wc}}, flags: []string{wc}, tool: wc, want: Ask, rule: `permissions.ask "plugin__wordcount__count"`},
		{name: "non-matching deny leaves allow",
			perms: settings.Permissions{Allow: []string{wc}, Deny: []string{"plugin__evil__*"}}, tool: wc, want: Allow, rule: `permissions.allow "plugin__wordcount__count"`},
		{name: "first matching rule is named",
			perms: settings.Permissions{Deny: []string{"plugin__*", "plugin__wordcount__*"}}, tool: wc, want: Deny, rule: `permissions.deny "plugin__*"`},
		{name: "settings allow named before --allow",
			perms: settings.Permissions{Allow: []string{"*"}}, flags: []string{wc}, tool: wc, want: Allow, rule: `permissions.allow "*"`},
		{name: "an untrusted project's plugin is not allowed by an exact settings rule",
			perms: settings.Permissions{Allow: []string{wc}}, untrusted: []string{"wordcount"}, tool: wc, want: Ask},
		{name: "nor by a wildcard",
			perms: settings.Permissions{Allow: []string{"*", "plugin__*"}}, untrusted: []string{"wordcount"}, tool: wc, want: Ask},
		{name: "--allow still allows an untrusted project's plugin",
			perms: settings.Permissions{Allow: []string{"*"}}, flags: []string{wc}, untrusted: []string{"wordcount"}, tool: wc, want: Allow, rule: `--allow "plugin__wordcount__count"`},
		{name: "deny applies to an untrusted project's plugin",
			perms: settings.Permissions{Deny: []string{"plugin__wordcount__*"}}, flags: []string{wc}, untrusted: []string{"wordcount"}, tool: wc, want: Deny, rule: `permissions.deny "plugin__wordcount__*"`},
		{name: "ask applies to an untrusted project's plugin",
			perms: settings.Permissions{Ask: []string{wc}}, untrusted: []string{"wordcount"}, tool: wc, want: Ask, rule: `permissions.ask "plugin__wordcount__count"`},
		{name: "other plugins keep their allow rules",
			perms: settings.Permissions{Allow: []string{"plugin__*"}}, untrusted: []string{"word"}, tool: wc, want: Allow, rule: `permissions.allow "plugin__*"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.perms, tc.flags, tc.untrusted...)
			if err != nil {
				t.Fatal(err)
			}
			v, rule := g.Decide(tc.tool)
			if v != tc.want || rule != tc.rule {
				t.Errorf("Decide(%q) = %v, %q; want %v, %q", tc.tool, v, rule, tc.want, tc.rule)
			}
		})
	}
}

func TestMalformedPatterns(t *testing.T) {
	for _, pat := range []string{"", "**", "plugin__*__count", "plugin__x**", "*plugin", " plugin__x", "plugin__x ", "plugin x", "a\tb", "a\x1bb", "a\xffb"} {
		t.Run(fmt.Sprintf("%q", pat), func(t *testing.T) {
			for _, where := range []struct {
				source string
				perms  settings.Permissions
				flags  []string
			}{
				{"permissions.allow", settings.Permissions{Allow: []string{pat}}, nil},
				{"permissions.deny", settings.Permissions{Deny: []string{pat}}, nil},
				{"permissions.ask", settings.Permissions{Ask: []string{pat}}, nil},
				{"--allow", settings.Permissions{}, []string{pat}},
			} {
				g, err := New(where.perms, where.flags)
				if err == nil || g != nil {
					t.Fatalf("%s: New accepted %q", where.source, pat)
				}
				if !errors.Is(err, ErrPattern) {
					t.Errorf("error does not wrap ErrPattern: %v", err)
				}
				msg := err.Error()
				if !strings.Contains(msg, where.source) || !strings.Contains(msg, fmt.Sprintf("%q", pat)) ||
					!strings.Contains(msg, "patterns are exact tool names or prefix* with one trailing *") {
					t.Errorf("error %q should name %s, the pattern and the grammar", msg, where.source)
				}
			}
		})
	}
}

func TestEveryMalformedPatternReported(t *testing.T) {
	_, err := New(settings.Permissions{Allow: []string{"ok", "a**"}, Deny: []string{"*b"}}, []string{"c d"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`permissions.allow "a**"`, `permissions.deny "*b"`, `--allow "c d"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %s", err, want)
		}
	}
}

func TestValidPatterns(t *testing.T) {
	_, err := New(settings.Permissions{
		Allow: []string{"*", "plugin__wordcount__*", "plugin__wordcount__count", "Bash", "read_file", "mcp__x__y*"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestHowToAllow(t *testing.T) {
	const wc = "plugin__wordcount__count"
	g, err := New(settings.Permissions{
		Deny: []string{"plugin__evil__*"},
		Ask:  []string{"plugin__careful__run"},
	}, nil, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, want string }{
		// A settings rule would not help an untrusted project's tool.
		{"plugin__stranger__run", `plugin__stranger__run belongs to a project you have not trusted, so no settings rule allows it; pass --allow plugin__stranger__run, or run "bingo trust" in the project`},
		{wc, `add "plugin__wordcount__count" to permissions.allow in ~/.bingo/settings.json, or pass --allow plugin__wordcount__count`},
		// Adding an allow cannot help a denied or ask-ruled tool: say which rule decides.
		{"plugin__evil__rm", `plugin__evil__rm is denied by permissions.deny "plugin__evil__*", which no allow overrides; remove that rule from your settings to allow it`},
		{"plugin__careful__run", `plugin__careful__run is asked about by permissions.ask "plugin__careful__run", which wins over any allow; remove that rule from your settings to run it without asking`},
	} {
		got := g.HowToAllow(tc.tool)
		if got != tc.want {
			t.Errorf("HowToAllow(%q) =\n%s\nwant\n%s", tc.tool, got, tc.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("HowToAllow(%q) is more than one line", tc.tool)
		}
	}
	// Following the advice for an undecided tool allows it.
	g2, err := New(settings.Permissions{}, []string{wc})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g2.Decide(wc); v != Allow {
		t.Errorf("--allow %s did not allow it: %v", wc, v)
	}
}

func TestVerdict(t *testing.T) {
	var zero Decision
	if zero != Ask {
		t.Errorf("zero Decision is %v, want ask", zero)
	}
	for v, want := range map[Decision]string{Ask: "ask", Deny: "deny", Allow: "allow", Decision(7): "Decision(7)"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), want)
		}
	}
}

// The gate is read from many tool calls at once.
func TestConcurrentDecide(t *testing.T) {
	g, err := New(settings.Permissions{Allow: []string{"a*"}, Deny: []string{"ab"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Decision)
	for range 8 {
		go func() { v, _ := g.Decide("ab"); done <- v }()
	}
	for range 8 {
		if v := <-done; v != Deny {
			t.Errorf("Decide = %v", v)
		}
	}
}

func ExampleGate_Decide() {
	g, _ := New(settings.Permissions{
		Allow: []string{"plugin__wordcount__*"},
		Deny:  []string{"plugin__wordcount__delete"},
	}, nil)
	for _, tool := range []string{"plugin__wordcount__count", "plugin__wordcount__delete", "plugin__other__run"} {
		v, rule := g.Decide(tool)
		fmt.Printf("%s: %v %s\n", tool, v, rule)
	}
	// Output:
	// plugin__wordcount__count: allow permissions.allow "plugin__wordcount__*"
	// plugin__wordcount__delete: deny permissions.deny "plugin__wordcount__delete"
	// plugin__other__run: ask
}

// PatternRegexp, which schema/settings.json states, is Valid: for every
// character, in a name, alone and before the star.
func TestPatternRegexpIsValid(t *testing.T) {
	re := regexp.MustCompile(PatternRegexp)
	check := func(pat string) {
		if got, want := re.MatchString(pat), Valid(pat) == nil; got != want {
			t.Errorf("PatternRegexp on %q: %v, Valid: %v", pat, got, want)
		}
	}
	for _, pat := range []string{"", "*", "**", "a", "a*", "a**", "*a", "a*b", "plugin__x__*", "plugin__wordcount__count", " a", "a b", "a\t", "é*"} {
		check(pat)
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) {
			check("a" + string(r) + "b*")
		}
	}
}
