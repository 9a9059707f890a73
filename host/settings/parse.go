package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// layer is one file's settings as written: every key the file sets, by
// its path in the file ("deadlines.tool", "sandbox.x.memoryMiB"), holding
// the value its Kind reads (see value), and every section it writes,
// holding section{}. A key the file does not set is absent, which is what
// the merge needs to know and what decoding into Settings would lose.
type layer struct {
	set map[string]any
	// names are the names a file sets under each section of names
	// ("plugins", "env.plugins"), in file order.
	names map[string][]string
	// patternAt places each pattern of a permissions list, by the list's
	// path, for the checks made after parsing.
	patternAt map[string][]place
	// keys are the keys one below the top that the file sets, dotted
	// ("permissions.allow", "plugins.deploy", "provider.openai"), in file
	// order.
	keys []string
}

// section is what a layer holds for a section the file writes.
type section struct{}

// place is a line and a column, as in Error.
type place struct{ line, col int }

// lookup returns the value of the key at path and whether the file set
// it; a value of another type than T (a section where a key was asked
// for) is not set.
func get[T any](l *layer, path string) (T, bool) {
	v, ok := l.set[path].(T)
	return v, ok
}

// has reports whether the file sets the key or section at path.
func (l *layer) has(path string) bool {
	_, ok := l.set[path]
	return ok
}

// drop forgets the key or section at path and everything under it, as if
// the file had not set it.
func (l *layer) drop(path string) {
	for p := range l.set {
		if p == path || strings.HasPrefix(p, path+".") {
			delete(l.set, p)
		}
	}
	for p := range l.names {
		if p == path || strings.HasPrefix(p, path+".") {
			delete(l.names, p)
		}
	}
	if parent, name, ok := cutLast(path); ok {
		l.names[parent] = slices.DeleteFunc(l.names[parent], func(n string) bool { return n == name })
	}
}

// cutLast splits a path at its last dot.
func cutLast(path string) (parent, last string, ok bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}

// parse reads one settings file. It walks the JSON token by token, rather
// than unmarshalling into a struct, so that every refusal can name the key
// and the line and column it sits at.
func parse(file string, data []byte) (*layer, error) {
	l := &layer{set: map[string]any{}, names: map[string][]string{}, patternAt: map[string][]place{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return l, nil // an empty file says nothing; it is not a mistake
	}
	p := &parser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data)), last: place{line: 1, col: 1}}
	p.dec.UseNumber()
	// Check the syntax of the whole file first: the decoder's streaming
	// errors count offsets from the start of the value being read, so
	// they cannot place a mistake, while Unmarshal's count from the file's
	// start.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		return nil, p.syntax(0, err)
	}
	if err := p.value(l, "", ""); err != nil {
		return nil, err
	}
	at := p.at()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(at, "unexpected text after the settings object")
	}
	if parsed != nil {
		parsed(data)
	}
	return l, nil
}

// parsed, when set (by tests), is given every file parse accepts, so that
// each can be checked against schema/settings.json.
var parsed func(data []byte)

type parser struct {
	file string
	data []byte
	dec  *json.Decoder
	// last is the place of byte offset lastOff, where place counts on
	// from.
	last    place
	lastOff int64
}

// at returns the offset at which the next token starts. The decoder's own
// offset stops after the previous token, before any separator.
func (p *parser) at() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

// place returns the line and column of byte offset off. The parser asks
// for offsets in file order, so it goes on from where the last answer
// left off (p.last) rather than counting from the start of the file: a
// file of many strings, on one line or many, costs its length, not its
// length times its strings.
func (p *parser) place(off int64) place {
	off = min(max(off, 0), int64(len(p.data)))
	if off < p.lastOff {
		p.lastOff, p.last = 0, place{line: 1, col: 1}
	}
	seg := p.data[p.lastOff:off]
	if nl := bytes.LastIndexByte(seg, '\n'); nl >= 0 {
		p.last.line += bytes.Count(seg, []byte("\n"))
		p.last.col = 1 + utf8.RuneCount(seg[nl+1:])
	} else {
		p.last.col += utf8.RuneCount(seg)
	}
	p.lastOff = off
	return p.last
}

// errAt returns an *Error placing msg at byte offset off.
func (p *parser) errAt(off int64, format string, args ...any) error {
	at := p.place(off)
	return &Error{File: p.file, Line: at.line, Col: at.col, Err: fmt.Errorf(format, args...)}
}

// token reads the next token, turning a syntax error into a placed *Error.
func (p *parser) token() (json.Token, error) {
	at := p.at()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(at, err)
	}
	return tok, nil
}

func (p *parser) syntax(at int64, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input"):
		return p.errAt(int64(len(p.data)), "not valid JSON: the file ends in the middle of a value")
	case errors.As(err, &se):
		// Offset counts the offending byte itself.
		return p.errAt(se.Offset-1, "not valid JSON: %s", strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.errAt(int64(len(p.data)), "not valid JSON: the file ends in the middle of a value")
	}
	return p.errAt(at, "not valid JSON: %v", err)
}

// describe names a token's JSON type for a message.
func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// object reads an object at path, calling each for every key with the
// key's offset; each must read the key's value. A key given twice is
// refused: JSON would silently keep the last, and the person meant one.
func (p *parser) object(path string, each func(key string, at int64) error) error {
	at := p.at()
	tok, err := p.token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return p.errAt(at, "%s must be an object, not %s", path, describe(tok))
	}
	seen := make(map[string]bool)
	for p.dec.More() {
		at := p.at()
		tok, err := p.token()
		if err != nil {
			return err
		}
		key := tok.(string) // inside an object the decoder yields only string keys
		if seen[key] {
			return p.errAt(at, "key %q appears twice in %s", key, path)
		}
		seen[key] = true
		if err := each(key, at); err != nil {
			return err
		}
	}
	_, err = p.token() // '}'
	return err
}

func (p *parser) unknown(at int64, key, path string, known []string) error {
	return p.errAt(at, "unknown key %q in %s (known keys: %s)", key, path, strings.Join(known, ", "))
}

func (p *parser) str(path string) (string, error) {
	at := p.at()
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", p.errAt(at, "%s must be a string, not %s", path, describe(tok))
	}
	return s, nil
}

func (p *parser) boolean(path string) (bool, error) {
	at := p.at()
	tok, err := p.token()
	if err != nil {
		return false, err
	}
	b, ok := tok.(bool)
	if !ok {
		return false, p.errAt(at, "%s must be true or false, not %s", path, describe(tok))
	}
	return b, nil
}

// positive reads a positive whole number.
func (p *parser) positive(path string) (*int, error) {
	at := p.at()
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	n, ok := tok.(json.Number)
	if !ok {
		return nil, p.errAt(at, "%s must be a positive whole number, not %s", path, describe(tok))
	}
	i, err := strconv.Atoi(n.String())
	if err != nil || i <= 0 {
		return nil, p.errAt(at, "%s must be a positive whole number, not %s", path, n)
	}
	return &i, nil
}

// duration reads a positive duration; with zero (what "0" means) not "",
// "0" too, as Never.
func (p *parser) duration(path, zero string) (time.Duration, error) {
	at := p.at()
	s, err := p.str(path)
	if err != nil {
		return 0, err
	}
	if s == "0" && zero != "" {
		return Never, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, p.errAt(at, "%s: %q is not a duration (write it like \"60s\", \"150ms\" or \"1m30s\")", path, s)
	}
	switch {
	case d <= 0 && zero != "":
		return 0, p.errAt(at, "%s must be positive, or \"0\" for %s, not %q", path, zero, s)
	case d <= 0:
		return 0, p.errAt(at, "%s must be positive, not %q", path, s)
	}
	return d, nil
}

// strs reads an array of strings. check, if not nil, is called with each
// element's path, value and offset, and may refuse it.
func (p *parser) strs(path string, check func(path, s string, at int64) error) ([]string, error) {
	at := p.at()
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, p.errAt(at, "%s must be an array of strings, not %s", path, describe(tok))
	}
	out := []string{}
	for p.dec.More() {
		at := p.at()
		elem := fmt.Sprintf("%s[%d]", path, len(out))
		s, err := p.str(elem)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(elem, s, at); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	_, err = p.token() // ']'
	return out, err
}

// raw reads any JSON value as it was written.
func (p *parser) raw() (json.RawMessage, error) {
	at := p.at()
	var raw json.RawMessage
	if err := p.dec.Decode(&raw); err != nil {
		return nil, p.syntax(at, err)
	}
	return raw, nil
}

// value reads the value of the key at path (spelled spell in the table
// of keys; "" for the whole file) into l, as the table says: a section's
// keys each by its own entry, anything else by the key's Kind. The table
// is the only list of keys and kinds the parser knows.
func (p *parser) value(l *layer, spell, path string) error {
	k, _ := lookup(spell)
	switch {
	case spell == "", k.Kind == KindSection, k.Kind == KindNames:
		return p.section(l, k, spell, path)
	case k.Kind == KindPatterns:
		var where []place
		v, err := p.strs(path, func(_, _ string, at int64) error {
			where = append(where, p.place(at))
			return nil
		})
		l.set[path], l.patternAt[path] = v, where
		return err
	}
	at := p.at()
	v, err := p.scalar(k, path)
	if err != nil {
		return err
	}
	l.set[path] = v
	if k.Kind == KindProvider {
		if _, _, ok := (ProviderChoice{Plugin: v.(string)}).PluginProvider(); !ok {
			return p.errAt(at, "%s must be \"<plugin>/<providerId>\", not %q", path, v)
		}
	}
	return nil
}

// section reads the object at path: each key must be one the table lists
// under spell (any name, for a section of names), and a OneOf section may
// set at most one of its alternatives.
func (p *parser) section(l *layer, k Key, spell, path string) error {
	start := p.at()
	label := path
	if path == "" {
		label = "the settings file"
	}
	l.set[path] = section{}
	set := map[string]int64{} // key → its offset
	err := p.object(label, func(key string, at int64) error {
		child, childPath := spell+"."+key, path+"."+key
		if spell == "" {
			child, childPath = key, key
		}
		if _, fixed := lookup(spell + "." + key); k.Kind == KindNames && (!fixed || key == "<name>") {
			child = spell + ".<name>"
			l.names[path] = append(l.names[path], key)
		}
		if _, ok := lookup(child); !ok {
			return p.unknown(at, key, label, children(spell))
		}
		if strings.Count(childPath, ".") == 1 {
			l.keys = append(l.keys, childPath)
		}
		set[key] = at
		return p.value(l, child, childPath)
	})
	if err != nil || path == "" {
		return err
	}
	return p.together(k, spell, path, set, start)
}

// together checks the keys a section sets against the table's OneOf and
// Requires.
func (p *parser) together(k Key, spell, path string, set map[string]int64, start int64) error {
	var alternatives []string
	for _, name := range children(spell) {
		c, _ := lookup(spell + "." + name)
		if c.Requires == "" {
			alternatives = append(alternatives, name)
		}
	}
	var chosen []string
	for _, name := range alternatives {
		if _, ok := set[name]; ok {
			chosen = append(chosen, name)
		}
	}
	if k.OneOf && len(chosen) > 1 {
		return p.errAt(start, "%s: choose %s, not both", path, strings.Join(chosen, " or "))
	}
	for _, name := range children(spell) {
		c, _ := lookup(spell + "." + name)
		at, ok := set[name]
		if _, beside := set[c.Requires]; !ok || c.Requires == "" || beside {
			continue
		}
		msg := fmt.Sprintf("%s.%s needs %s.%s beside it", path, name, path, c.Requires)
		if k.OneOf && len(chosen) > 0 {
			alt := path + "." + chosen[0]
			msg += fmt.Sprintf("; it does not apply to %s", alt)
			if _, ok := lookup(spell + "." + chosen[0] + "." + name); ok {
				msg += fmt.Sprintf(", which takes %s.%s", alt, name)
			}
		}
		return p.errAt(at, "%s", msg)
	}
	return nil
}

// scalar reads a value of k's Kind, refusing what the Kind does not hold.
func (p *parser) scalar(k Key, path string) (any, error) {
	at := p.at()
	switch k.Kind {
	case KindDuration:
		return p.duration(path, k.Zero)
	case KindCount:
		n, err := p.positive(path)
		if err != nil {
			return nil, err
		}
		return *n, nil
	case KindBool:
		return p.boolean(path)
	case KindJSON:
		return p.raw()
	case KindEnvNames:
		return p.envNames(path)
	case KindPaths:
		return p.strs(path, func(elem, s string, at int64) error {
			if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
				return p.errAt(at, "%s must be an absolute path or one from ~/, not %q", elem, s)
			}
			return nil
		})
	case KindHosts:
		return p.strs(path, func(elem, s string, at int64) error {
			if !isHostPort(s) {
				return p.errAt(at, "%s must be \"host:port\" or \"*\", not %q", elem, s)
			}
			return nil
		})
	}
	s, err := p.str(path)
	if err != nil {
		return nil, err
	}
	switch k.Kind {
	case KindString:
		if s == "" {
			return nil, p.errAt(at, "%s must not be empty", path)
		}
	case KindURL:
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, p.errAt(at, "%s must be an http or https URL, not %q", path, s)
		}
	case KindEnvName:
		if !isEnvName(s) {
			// Do not echo the value: a person who pasted the key
			// itself here would see it again in a log.
			return nil, p.errAt(at, "%s must name an environment variable (like OPENAI_API_KEY) that holds the key, not the key itself", path)
		}
	}
	return s, nil
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	if s == "" || ('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// envNames reads an array of environment variable names.
func (p *parser) envNames(path string) ([]string, error) {
	return p.strs(path, func(elem, s string, at int64) error {
		if !isEnvName(s) {
			// Do not echo the value: it may be a secret pasted in the
			// wrong place.
			return p.errAt(at, "%s must be an environment variable's name (like GITHUB_TOKEN)", elem)
		}
		return nil
	})
}
