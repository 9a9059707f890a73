package render

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// URL returns the URL s as it may be shown or logged: its userinfo (a
// user and password) becomes "***", and so does the value of every query
// or fragment parameter whose name, unescaped, looks like it carries a
// secret (api_key, token, access_token, key, secret, password, sig, …),
// unless that value is a
// bare ${VAR}, which names the secret rather than holding it. It works on
// the text, not on a parsed URL, so that a URL still holding ${VAR}s (as
// the person wrote it) reads as they wrote it. The result is for a
// person: it is cleaned as Line cleans.
func URL(s string) string { return Line(HideURLSecrets(s)) }

// HideURLSecrets is URL without Line's cleaning, for a caller that shows
// every character itself (the trust prompt makes invisible ones visible
// rather than dropping them).
func HideURLSecrets(s string) string {
	rest := s
	var b strings.Builder
	if i := strings.Index(rest, "://"); i >= 0 {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			b.WriteString("***")
			rest = rest[at:]
		}
	}
	// A fragment is hidden as a query is: an OAuth implicit grant puts its
	// access_token there.
	frag, hasFrag := "", false
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest, frag, hasFrag = rest[:h], rest[h+1:], true
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		hideParams(&b, query)
	}
	if hasFrag {
		b.WriteByte('#')
		hideParams(&b, frag)
	}
	return b.String()
}

// hideParams writes the parameters in s (name=value, split at & and, as
// some servers split them, ;) to b, the value of each secretName hidden.
func hideParams(b *strings.Builder, s string) {
	for s != "" {
		pair, sep := s, ""
		if i := strings.IndexAny(s, "&;"); i >= 0 {
			pair, sep, s = s[:i], s[i:i+1], s[i+1:]
		} else {
			s = ""
		}
		k, v, ok := strings.Cut(pair, "=")
		if ok && v != "" && secretName(k) && !bareVar.MatchString(v) {
			v = "***"
		}
		b.WriteString(k)
		if ok {
			b.WriteString("=" + v)
		}
		b.WriteString(sep)
	}
}

// bareVar is a value that is only a ${VAR}: the name of a secret, not one.
var bareVar = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// secretName reports whether a query parameter's name looks like one
// that carries a credential. It errs towards hiding: a value hidden
// wrongly costs a person a look at their configuration, one shown wrongly
// is a leaked key.
func secretName(k string) bool {
	k = unescaped(k)
	k = strings.ToLower(strings.NewReplacer("-", "_", ".", "_").Replace(k))
	switch k {
	case "key", "auth", "code", "sig", "pass", "pwd", "jwt", "bearer", "session", "sessionid":
		return true
	}
	for _, part := range []string{"token", "secret", "passw", "apikey", "api_key", "_key", "key_", "auth", "signature", "credential", "session_id"} {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

// unescaped is the name k as a server may read it: its %XX escapes and
// + decoded, over again while that changes it (a few times at most, for a
// name escaped twice), an escape that is not one left as it is, where
// url.QueryUnescape would give up on the whole name.
func unescaped(k string) string {
	for range 4 {
		var b strings.Builder
		for i := 0; i < len(k); i++ {
			switch c := k[i]; {
			case c == '+':
				b.WriteByte(' ')
			case c == '%' && i+2 < len(k) && ishex(k[i+1]) && ishex(k[i+2]):
				n, _ := strconv.ParseUint(k[i+1:i+3], 16, 8)
				b.WriteByte(byte(n))
				i += 2
			default:
				b.WriteByte(c)
			}
		}
		if b.String() == k {
			break
		}
		k = b.String()
	}
	return k
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Escape returns s with every character Clean would remove (ESC and the
// other C0 controls but tab and newline, DEL, the C1 controls, the bidi
// controls) written as a Go escape (\x1b, \u202e) instead, and invalid
// UTF-8 as \x escapes of its bytes: for a log, which must show what a
// plugin sent, and must not let it act on the terminal that shows the
// log, nor make one line read as two.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r == '\uFFFD' || isControl(r) && r != '\t' && r != '\n' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == '\uFFFD' && strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteRune(r) // a real U+FFFD
		case r == '\uFFFD':
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n' || !isControl(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
