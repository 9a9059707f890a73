package manifest

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Expand returns a copy of e with every ${VAR} and ${VAR:-default} in its
// command, arguments, env values, url and header values replaced from
// lookup: ${VAR:-default} is default when VAR is unset or empty, and
// ${VAR} of an unset variable is an *UnsetError naming it. VAR is a letter
// or "_" followed by letters, digits and "_"; anything else, and $VAR
// without braces, is left as written. This is the expansion of MCP
// configuration files (.mcp.json), which the host does for an MCP
// server's entry when it starts one the person trusts, never at load: a
// file the person has not trusted cannot read a variable into anything.
// The host looks variables up only in what the person's environment rule
// gives that plugin ([Manifest.Resolve]), so an entry cannot read a
// variable the plugin itself would not be given.
func (e Entry) Expand(lookup func(string) (string, bool)) (Entry, error) {
	unset := map[string]bool{}
	one := func(s string) string { return expandVars(s, lookup, unset) }
	x := e
	x.Command = one(e.Command)
	x.URL = one(e.URL)
	if e.Args != nil {
		x.Args = make([]string, len(e.Args))
		for i, a := range e.Args {
			x.Args[i] = one(a)
		}
	}
	x.Env = expandMap(e.Env, one)
	x.Headers = expandMap(e.Headers, one)
	if e.OAuth != nil {
		o := *e.OAuth
		o.ClientID, o.ClientSecret, o.ClientMetadataURL = one(o.ClientID), one(o.ClientSecret), one(o.ClientMetadataURL)
		x.OAuth = &o
	}
	if len(unset) > 0 {
		return x, &UnsetError{Names: slices.Sorted(maps.Keys(unset))}
	}
	if x.URL != "" {
		if err := checkURL(x.URL); err != nil {
			return x, fmt.Errorf("its url, expanded: %w", err)
		}
	}
	return x, nil
}

func expandMap(m map[string]string, one func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = one(v)
	}
	return out
}

// expandVars expands s as Expand says, adding to unset each variable
// lookup does not have that s reads without a default.
func expandVars(s string, lookup func(string) (string, bool), unset map[string]bool) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String()
		}
		inner := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !varName(name) {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			unset[name] = true
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// UnsetError is Expand's error for the variables an entry reads without
// a default that the lookup does not have.
type UnsetError struct {
	Names []string // sorted, once each
}

func (e *UnsetError) Error() string {
	if len(e.Names) == 1 {
		return fmt.Sprintf("${%s} is not set in your environment (give a default with ${%s:-default})", e.Names[0], e.Names[0])
	}
	return fmt.Sprintf("%s are not set in your environment (give each a default with ${VAR:-default})", VarList(e.Names))
}

// VarList writes names as the variables an entry reads: "${A}", "${A} and
// ${B}", "${A}, ${B} and ${C}".
func VarList(names []string) string {
	vars := make([]string, len(names))
	for i, n := range names {
		vars[i] = "${" + n + "}"
	}
	if len(vars) < 2 {
		return strings.Join(vars, "")
	}
	return strings.Join(vars[:len(vars)-1], ", ") + " and " + vars[len(vars)-1]
}

// Expands reports whether m's entry has its ${VAR}s expanded when it
// starts ([Entry.Expand]): an MCP server's entry, from a configuration
// file or a "protocol": "mcp" manifest. Any other entry is taken as
// written, but for ${PLUGIN_ROOT}.
func (m *Manifest) Expands() bool { return m.Entry.Protocol == ProtocolMCP }

// Resolve returns m as it starts with environ, the environment its
// process or server is given ("NAME=value"): if it Expands, with its
// entry's variables read from environ and nowhere else; otherwise m
// itself. The host starts what Resolve returns, and trust pins it, so
// what is pinned is what runs.
func (m *Manifest) Resolve(environ []string) (*Manifest, error) {
	if !m.Expands() {
		return m, nil
	}
	e, err := m.Entry.Expand(LookupIn(environ))
	if err != nil {
		return nil, err
	}
	r := *m
	r.Entry = e
	return &r, nil
}

// Vars names, sorted and once each, the variables m's entry reads when
// it starts: none unless it Expands. A ${VAR:-default} reads VAR too.
func (m *Manifest) Vars() []string {
	if !m.Expands() {
		return nil
	}
	read := map[string]bool{}
	// The expansion itself finds them, so Vars never disagrees with it.
	m.Entry.Expand(func(name string) (string, bool) {
		read[name] = true
		return "", true
	})
	return slices.Sorted(maps.Keys(read))
}

// varName reports whether s may name a variable in ${...}.
func varName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkURL accepts an http or https URL with a host. A URL still holding
// ${...} is checked once expanded.
func checkURL(s string) error {
	if strings.Contains(s, "${") {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	return nil
}

// validHeaderName accepts an HTTP header name: a token of visible ASCII
// without separators.
func validHeaderName(name string) error {
	if name == "" {
		return errors.New(`"entry.headers" has an empty header name`)
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return fmt.Errorf(`"entry.headers" name %q is not a valid HTTP header name`, name)
		}
	}
	return nil
}

// LookupIn looks a variable up in environ ("NAME=value" entries, as
// os.Environ returns them; a later entry wins), for [Entry.Expand].
func LookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range slices.Backward(environ) {
			if k, v, ok := strings.Cut(kv, "="); ok && foldKey(k) == foldKey(name) {
				return v, true
			}
		}
		return "", false
	}
}
