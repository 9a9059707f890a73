package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Problem is one way a value a plugin sent breaks the rules schema/plugin.json
// states, said in the wire's words rather than Go's.
type Problem struct {
	// Path is where, spelt with the wire's keys and indexes:
	// "commands[2].name". Empty means the value itself.
	Path string
	// Message is what is wrong: "want a string, got an object".
	Message string
	// Unknown marks a key the schema does not have. A Go peer ignores such
	// a key, so it breaks nothing, but it is most often a misspelling of
	// one the plugin meant to send.
	Unknown bool
}

func (p Problem) Error() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Check returns every way raw, read as a value of type T, breaks the
// schema's rules, with paths starting at at. The rules are read from the
// same Go types and tags schema/plugin.json is generated from, as its
// generator reads them: a field without omitempty is required, and null
// only where a Go peer sends it (a nil slice, map or pointer); the
// jsonschema keywords enum, minLength, maxLength, pattern and type=object
// hold; an object holds no key its type does not name (reported as
// Unknown, so the caller may ignore the key and keep the rest).
func Check[T any](raw json.RawMessage, at string) []Problem {
	return checkAs(raw, reflect.TypeFor[T](), at)
}

// checkAs is Check for a type known at run time.
func checkAs(raw json.RawMessage, t reflect.Type, at string) []Problem {
	c := checker{strict: true, depth: -1}
	c.value(raw, t, nil, at, 0)
	return c.problems
}

// Decode decodes a plugin's answer into a T as a Go peer would, keys the
// schema does not know ignored, with two differences. What T itself
// requires (the answer's envelope: the "output" of a tool/call answer)
// must be there, and not null unless the schema allows null: a Go decoder
// would leave it zero and the answer would pass for an empty one. And an
// answer that does not decode is reported as the first Problem in it,
// "output.display.rows[0]: want an array of strings, got 1", rather than
// in Go's words.
func Decode[T any](raw json.RawMessage) (T, error) {
	var v T
	t := reflect.TypeFor[T]()
	if err := json.Unmarshal(raw, &v); err != nil {
		// The walk descends everywhere to find what the decoder choked on.
		if p, ok := firstProblem(raw, t, -1); ok {
			return v, p
		}
		return v, err
	}
	// Decoded: only the envelope is left to check, and a field that
	// decoded to something was there, so the common answer costs no
	// second reading.
	if filled(reflect.ValueOf(v), t) {
		return v, nil
	}
	if p, ok := firstProblem(raw, t, 1); ok {
		return v, p
	}
	return v, nil
}

// filled reports whether every field a struct t requires is set in v.
func filled(v reflect.Value, t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for _, f := range fieldsOf(t) {
		if f.required && v.Field(f.index).IsZero() {
			return false
		}
	}
	return true
}

func firstProblem(raw json.RawMessage, t reflect.Type, depth int) (Problem, bool) {
	c := checker{depth: depth}
	c.value(raw, t, nil, "", 0)
	for _, p := range c.problems {
		if !p.Unknown {
			return p, true
		}
	}
	return Problem{}, false
}

// KindOf names the kind of JSON value raw holds, as a message says it: "an
// object", "an array", "a string", "a number", "a boolean" or "null". It
// looks at the first byte only: raw must be valid JSON.
func KindOf(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ToolInput is raw, valid JSON, as a tool is given it: no input, or null,
// is the empty object, and an object is itself. For anything else ok is
// false and kind says what it is (KindOf): a tool's input is a JSON
// object, as every tool's input schema says.
func ToolInput(raw json.RawMessage) (input json.RawMessage, kind string, ok bool) {
	switch kind = KindOf(raw); kind {
	case "nothing", "null":
		return json.RawMessage("{}"), kind, true
	case "an object":
		return raw, kind, true
	}
	return nil, kind, false
}

// checker walks a JSON value beside the Go type it should decode into.
type checker struct {
	// strict checks every rule at every depth (a declaration). Otherwise
	// it checks what breaks a Go decoder (types) and, on the value itself
	// only, the required fields and nulls (an answer's envelope).
	strict bool
	// depth is how many levels below the value are looked at; -1 is all.
	depth    int
	problems []Problem
}

func (c *checker) add(at, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: at, Message: fmt.Sprintf(format, args...)})
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// value checks raw as a t at path at, level levels below the value Check
// or Decode was given; r holds the rules of the field it is, if it is one.
func (c *checker) value(raw json.RawMessage, t reflect.Type, r *rules, at string, level int) {
	kind := KindOf(raw)
	if t == rawMessage || t.Kind() == reflect.Interface {
		// Any JSON, unless the schema says an object.
		if c.strict && r != nil && r.object && kind != "an object" && !(kind == "null" && r.nullable) {
			c.add(at, "want an object, got %s", kind)
		}
		return
	}
	if kind == "null" {
		// A Go decoder takes null for anything; the schema only where a Go
		// peer sends it. Strictly, and for an answer and its envelope, the
		// schema rules.
		if (c.strict || level <= 1) && (r == nil || !r.nullable) {
			c.add(at, "want %s, got null", want(t, r))
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := false
	switch t.Kind() {
	case reflect.String:
		wrong = kind != "a string"
	case reflect.Bool:
		wrong = kind != "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		wrong = kind != "a number" || json.Unmarshal(raw, &n) != nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		wrong = kind != "a number" || json.Unmarshal(raw, &n) != nil
	case reflect.Float32, reflect.Float64:
		wrong = kind != "a number"
	case reflect.Slice:
		wrong = kind != "an array"
	case reflect.Map, reflect.Struct:
		wrong = kind != "an object"
	default:
		panic(fmt.Sprintf("protocol: %s cannot cross the wire", t))
	}
	if wrong {
		got := kind
		if n := bytes.TrimSpace(raw); kind == "a number" && len(n) <= 24 {
			got = string(n) // 1.5 for an integer says more than "a number"
		}
		c.add(at, "want %s, got %s", want(t, r), got)
		return
	}
	if c.depth >= 0 && level >= c.depth {
		return
	}
	switch t.Kind() {
	case reflect.String:
		if c.strict && r != nil {
			var s string
			_ = json.Unmarshal(raw, &s)
			r.check(c, s, at)
		}
	case reflect.Slice:
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items)
		for i, item := range items {
			c.value(item, t.Elem(), nil, at+"["+strconv.Itoa(i)+"]", level+1)
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		for _, k := range sortedKeys(m) {
			c.value(m[k], t.Elem(), nil, join(at, k), level+1)
		}
	case reflect.Struct:
		c.object(raw, t, at, level)
	}
}

// object checks the fields of a struct's object.
func (c *checker) object(raw json.RawMessage, t reflect.Type, at string, level int) {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	fields := fieldsOf(t)
	for i := range fields {
		f := &fields[i]
		v, ok := m[f.name]
		if !ok {
			if f.required && (c.strict || level == 0) {
				c.add(join(at, f.name), "required, but missing")
			}
			continue
		}
		c.value(v, t.Field(f.index).Type, &f.rules, join(at, f.name), level+1)
	}
	for _, k := range sortedKeys(m) {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
			c.problems = append(c.problems, Problem{Path: join(at, k), Message: "unknown key", Unknown: true})
		}
	}
	if u, ok := unionOf(t); ok && c.strict {
		c.union(u, m, at)
	}
}

// union holds the object m of a tagged union to its kind: no field of
// another kind, and every field its kind requires.
func (c *checker) union(u Union, m map[string]json.RawMessage, at string) {
	var tag string
	if json.Unmarshal(m[u.Tag], &tag) != nil {
		return // a missing or mistyped tag is reported as such
	}
	i := slices.IndexFunc(u.Kinds, func(k UnionKind) bool { return k.Value == tag })
	if i < 0 {
		return // the tag's enum reports it
	}
	kind := u.Kinds[i]
	for _, other := range u.Kinds {
		for _, f := range other.Fields {
			if _, set := m[f]; set && other.Value != tag && !slices.Contains(kind.Fields, f) {
				c.add(join(at, f), "not a field of %s %q", u.Tag, tag)
			}
		}
	}
	for _, f := range kind.Required {
		if _, set := m[f]; !set {
			c.add(join(at, f), "required with %s %q, but missing", u.Tag, tag)
		}
	}
}

// want says what a t is on the wire.
func want(t reflect.Type, r *rules) string {
	if r != nil && r.object {
		return "an object"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem(), nil)
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t == rawMessage {
			return "JSON"
		}
		return "an array of " + plural(t.Elem())
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "an integer"
}

func plural(t reflect.Type) string {
	switch w := want(t, nil); w {
	case "JSON":
		return "JSON values"
	case "an object":
		return "objects"
	default:
		if rest, ok := strings.CutPrefix(w, "an array of "); ok {
			return "arrays of " + rest
		}
		_, noun, _ := strings.Cut(w, " ")
		return noun + "s"
	}
}

// join is the path of key inside at. A key that is not a plain word, or is
// longer than Quote keeps, is bracketed and quoted (and cut short), so a
// plugin's key can neither make a path misread nor make it any length.
func join(at, key string) string {
	if key == "" || len(key) > quoteMost || strings.ContainsFunc(key, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) {
		return at + "[" + Quote(key) + "]"
	}
	if at == "" {
		return key
	}
	return at + "." + key
}

// quoteMost is how many characters of what a plugin sent Quote keeps.
const quoteMost = 40

// Quote quotes what a plugin sent for a message, cut short: a 5000
// character name needs no repeating to be refused.
func Quote(s string) string {
	if utf8.RuneCountInString(s) > quoteMost {
		s = string([]rune(s)[:quoteMost]) + "…"
	}
	return strconv.Quote(s)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rules is what the schema states about one field's value beyond its type.
type rules struct {
	nullable bool // the schema allows null: required, and a nil slice, map or pointer in Go
	object   bool // jsonschema type=object on a json.RawMessage
	enum     []string
	minLen   int // in characters; -1: none
	maxLen   int
	pattern  *regexp.Regexp
}

// check applies the string rules to s, reporting the first one broken:
// one reason is enough to refuse a value.
func (r *rules) check(c *checker, s string, at string) {
	n := utf8.RuneCountInString(s) // JSON Schema counts characters
	switch {
	case len(r.enum) > 0 && !slices.Contains(r.enum, s):
		quoted := make([]string, len(r.enum))
		for i, e := range r.enum {
			quoted[i] = strconv.Quote(e)
		}
		c.add(at, "%s is not one of %s", Quote(s), strings.Join(quoted, ", "))
	case r.minLen == 1 && n == 0:
		c.add(at, "must not be empty")
	case r.minLen >= 0 && n < r.minLen:
		c.add(at, "want at least %d characters, got %d", r.minLen, n)
	case r.maxLen >= 0 && n > r.maxLen:
		c.add(at, "%d characters long; at most %d", n, r.maxLen)
	case r.pattern != nil && !r.pattern.MatchString(s):
		c.add(at, "%s does not match %s", Quote(s), r.pattern)
	}
}

// field is one field of a wire type, as the schema sees it.
type field struct {
	name     string
	index    int
	required bool
	rules
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf reads t's fields as the schema generator does (invopop/jsonschema
// with this module's tags). A jsonschema keyword it does not check panics:
// the schema would state a rule the host does not hold.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := strings.Split(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || tag[0] == "-" {
			continue
		}
		f := field{name: tag[0], index: i, rules: rules{minLen: -1, maxLen: -1}}
		if f.name == "" {
			f.name = sf.Name
		}
		f.required = !slices.Contains(tag[1:], "omitempty") && !slices.Contains(tag[1:], "omitzero")
		switch sf.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			f.nullable = f.required
		}
		for kv := range strings.SplitSeq(sf.Tag.Get("jsonschema"), ",") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			isString := sf.Type.Kind() == reflect.String
			switch {
			case k == "enum" && isString:
				f.enum = append(f.enum, v)
			case k == "minLength" && isString:
				f.minLen, _ = strconv.Atoi(v)
			case k == "maxLength" && isString:
				f.maxLen, _ = strconv.Atoi(v)
			case k == "pattern" && isString:
				f.pattern = regexp.MustCompile(v)
			case kv == "type=object" && sf.Type == rawMessage:
				f.object = true
			default:
				panic(fmt.Sprintf("protocol: %s.%s: the schema states %q, which Check does not hold", t, sf.Name, kv))
			}
		}
		fs = append(fs, f)
	}
	fieldCache.Store(t, fs)
	return fs
}
