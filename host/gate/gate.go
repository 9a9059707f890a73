package gate

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/proxy"
)

// Decision is what the gate decides about one tool call.
type Decision int

const (
	// Ask: put the call to the person. It is the zero value, so a Decision
	// nobody set means asking, never allowing.
	Ask Decision = iota
	// Deny: refuse the call.
	Deny
	// Allow: run the call without asking.
	Allow
)

// String returns "ask", "deny" or "allow".
func (v Decision) String() string {
	switch v {
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	}
	return fmt.Sprintf("Decision(%d)", int(v))
}

// ErrPattern is the error every refused pattern wraps.
var ErrPattern = errors.New("patterns are exact tool names or prefix* with one trailing *")

// rule is one pattern and where it was written.
type rule struct {
	source  string // "permissions.deny", "--allow"
	pattern string
}

func (r rule) matches(tool string) bool {
	if prefix, ok := strings.CutSuffix(r.pattern, "*"); ok {
		return strings.HasPrefix(tool, prefix)
	}
	return tool == r.pattern
}

// String names the rule the way a person can find it again:
// permissions.deny "plugin__evil__*".
func (r rule) String() string { return fmt.Sprintf("%s %q", r.source, r.pattern) }

// Gate decides tool calls by the person's rules. It is immutable once
// built and safe for concurrent use.
type Gate struct {
	deny, ask, allow []rule
	// untrusted names the plugins of an untrusted project: no allow rule
	// from a settings file allows their tools.
	untrusted map[string]bool
}

// New builds a Gate from the merged settings and the --allow flags, which
// count as allow rules. Every malformed pattern is reported, each naming
// where it was written, in one error wrapping ErrPattern.
//
// untrusted names the plugins of a project the person has not trusted.
// Allow rules from settings are not applied to their tools: the person
// wrote them for their own plugins, and a repository's plugin may take one
// of their names. Deny and ask rules apply, and so does --allow, which the
// person typed for this run.
func New(p settings.Permissions, extraAllow []string, untrusted ...string) (*Gate, error) {
	g := &Gate{untrusted: make(map[string]bool, len(untrusted))}
	for _, name := range untrusted {
		g.untrusted[name] = true
	}
	var errs []error
	add := func(dst *[]rule, source string, patterns []string) {
		for _, pat := range patterns {
			if !valid(pat) {
				errs = append(errs, fmt.Errorf("%s %q: %w", source, pat, ErrPattern))
				continue
			}
			*dst = append(*dst, rule{source: source, pattern: pat})
		}
	}
	add(&g.deny, "permissions.deny", p.Deny)
	add(&g.ask, "permissions.ask", p.Ask)
	add(&g.allow, "permissions.allow", p.Allow)
	add(&g.allow, flagSource, extraAllow)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// flagSource is the source of rules given with --allow.
const flagSource = "--allow"

// untrustedTool reports whether tool (plugin__<plugin>__<tool>) belongs to
// a plugin of an untrusted project.
func (g *Gate) untrustedTool(tool string) bool {
	plugin, _, ok := proxy.SplitToolName(tool)
	return ok && g.untrusted[plugin]
}

// Valid returns nil if pat is a pattern the gate accepts, or why not
// (wrapping ErrPattern). Settings use it to drop a repository's malformed
// pattern instead of failing every command.
func Valid(pat string) error {
	if !valid(pat) {
		return ErrPattern
	}
	return nil
}

// PatternRegexp is the grammar Valid holds a pattern to, as a regular
// expression in the syntax Go's regexp and ECMAScript share, for
// schema/settings.json: an exact name, or a prefix with one trailing "*"
// (or "*" alone), free of white space (unicode.IsSpace), control
// characters (unicode.IsControl) and U+FFFD. The white space and the
// control characters above U+00A0 stand in it as themselves.
const PatternRegexp = "^([^*" + notInPattern + "]+\\*?|\\*)$"

// notInPattern is the class of characters a pattern may not hold.
const notInPattern = `\x00-\x20\x7f-\xa0` + "\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufffd"

// valid reports whether pat is an exact name or a prefix with one trailing
// "*", free of white space and control characters.
func valid(pat string) bool {
	if pat == "" || strings.Contains(strings.TrimSuffix(pat, "*"), "*") {
		return false
	}
	return !strings.ContainsFunc(pat, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar
	})
}

// Decide returns the decision on a call of the named tool and the rule that
// decided it, as `permissions.deny "plugin__evil__*"` or
// `--allow "plugin__wordcount__count"`. The rule is "" when none matched
// and the decision is the undecided Ask. When several rules of the deciding
// kind match, the first written one is named.
func (g *Gate) Decide(tool string) (Decision, string) {
	untrusted := g.untrustedTool(tool)
	for _, set := range []struct {
		rules []rule
		v     Decision
	}{{g.deny, Deny}, {g.ask, Ask}, {g.allow, Allow}} {
		for _, r := range set.rules {
			if set.v == Allow && untrusted && r.source != flagSource {
				continue
			}
			if r.matches(tool) {
				return set.v, r.String()
			}
		}
	}
	return Ask, ""
}

// HowToAllow returns one line telling the person how to let the named tool
// run without asking. When a deny or ask rule decides the tool, adding an
// allow would change nothing, so the line says which rule to remove
// instead.
func (g *Gate) HowToAllow(tool string) string {
	switch v, r := g.Decide(tool); {
	case v == Deny:
		return fmt.Sprintf("%s is denied by %s, which no allow overrides; remove that rule from your settings to allow it", tool, r)
	case v == Ask && r != "":
		return fmt.Sprintf("%s is asked about by %s, which wins over any allow; remove that rule from your settings to run it without asking", tool, r)
	case g.untrustedTool(tool):
		return fmt.Sprintf("%s belongs to a project you have not trusted, so no settings rule allows it; pass --allow %s, or run \"bingo trust\" in the project", tool, tool)
	}
	return fmt.Sprintf("add %q to permissions.allow in ~/.bingo/settings.json, or pass --allow %s", tool, tool)
}
