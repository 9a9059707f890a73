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
// lookup (the person's environment): ${VAR:-default} is default when VAR
// is unset or empty, and ${VAR} of an unset variable is an error naming it.
// VAR is a letter or "_" followed by letters, digits and "_"; anything
// else, and $VAR without braces, is left as written. This is the
// expansion of MCP configuration files (.mcp.json), which the host does
// for an MCP server's entry when it starts one the person trusts, never
// at load: a file the person has not trusted cannot read a variable into
// anything.
func (e Entry) Expand(lookup func(string) (string, bool)) (Entry, error) {
	var err error
	one := func(s string) string {
		out, e := expandVars(s, lookup)
		if err == nil {
			err = e
		}
		return out
	}
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
	if err == nil && x.URL != "" {
		if e := checkURL(x.URL); e != nil {
			err = fmt.Errorf("its url, expanded: %w", e)
		}
	}
	return x, err
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

// expandVars expands s as Expand says.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String(), nil
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
			return "", fmt.Errorf("${%s} is not set in your environment (give a default with ${%s:-default})", name, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
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
