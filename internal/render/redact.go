package render

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// URL returns the URL s as it may be shown or logged: its userinfo (a
// user and password) becomes "***", and so does the value of every query
// parameter whose name looks like it carries a secret (api_key, token,
// access_token, key, secret, password, sig, …), unless that value is a
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
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		b.WriteString(rest)
		return b.String()
	}
	b.WriteString(rest[:q+1])
	query, frag := rest[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	for i, pair := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		k, v, ok := strings.Cut(pair, "=")
		if ok && v != "" && secretName(k) && !bareVar.MatchString(v) {
			v = "***"
		}
		b.WriteString(k)
		if ok {
			b.WriteString("=" + v)
		}
	}
	b.WriteString(frag)
	return b.String()
}

// bareVar is a value that is only a ${VAR}: the name of a secret, not one.
var bareVar = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// secretName reports whether a query parameter's name looks like one
// that carries a credential. It errs towards hiding: a value hidden
// wrongly costs a person a look at their configuration, one shown wrongly
// is a leaked key.
func secretName(k string) bool {
	if u, err := url.QueryUnescape(k); err == nil {
		k = u
	}
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
