package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// layer is one file's settings as written. A nil pointer or map means the
// file did not set that key, which is what the merge needs to know and
// what decoding into Settings would lose.
type layer struct {
	allow, deny, ask []string
	// patternAt places each pattern of allow, deny and ask, by list key,
	// for the checks made after parsing.
	patternAt map[string][]place
	plugins   map[string]json.RawMessage
	sandbox   map[string]Sandbox
	mcp       map[string]MCP
	env       *Env
	deadlines map[string]time.Duration
	limits    map[string]int
	provider  struct {
		plugin *string
		model  *string // with plugin only
		openai *openAILayer
	}
	maxSteps, compactAt *int
	wasmCompile         struct {
		counts map[string]int
		time   *time.Duration
	}
	// keys are the keys one below the top that the file sets, dotted
	// ("permissions.allow", "plugins.deploy", "provider.openai"), in file
	// order.
	keys []string
}

// place is a line and a column, as in Error.
type place struct{ line, col int }

// perm returns the list permissions.<key> is read into, or nil for an
// unknown key.
func (l *layer) perm(key string) *[]string {
	switch key {
	case "allow":
		return &l.allow
	case "deny":
		return &l.deny
	case "ask":
		return &l.ask
	}
	return nil
}

// turn returns the field turn.<key> is read into, or nil for an unknown
// key.
func (l *layer) turn(key string) **int {
	switch key {
	case "maxSteps":
		return &l.maxSteps
	case "compactAt":
		return &l.compactAt
	}
	return nil
}

// drop forgets the key top.sub, one of l.keys, as if the file had not set
// it. Under sandbox, env and provider, which are taken or left whole, it
// forgets the whole top key.
func (l *layer) drop(top, sub string) {
	switch top {
	case "permissions":
		*l.perm(sub) = nil
	case "plugins":
		delete(l.plugins, sub)
	case "deadlines":
		delete(l.deadlines, sub)
	case "limits":
		delete(l.limits, sub)
	case "turn":
		*l.turn(sub) = nil
	case "wasmCompile":
		delete(l.wasmCompile.counts, sub)
		if sub == "time" {
			l.wasmCompile.time = nil
		}
	case "sandbox":
		l.sandbox = nil
	case "mcp":
		l.mcp = nil
	case "env":
		l.env = nil
	case "provider":
		l.provider.plugin, l.provider.model, l.provider.openai = nil, nil, nil
	}
}

type openAILayer struct {
	baseURL, model, apiKeyEnv *string
}

// The keys the parser knows, section by section, as the table of keys
// (keys.go) lists them: the parser's messages name them, and a test holds
// the parser's switches to them.
var (
	topKeys         = children("")
	permissionsKeys = children("permissions")
	sandboxKeys     = children("sandbox.<name>")
	mcpKeys         = children("mcp.<name>")
	providerKeys    = children("provider")
	openAIKeys      = children("provider.openai")
	turnKeys        = children("turn")
	wasmCompileKeys = children("wasmCompile")
	envKeys         = children("env")
	pluginEnvKeys   = children("env.plugins.<name>")
)

// parse reads one settings file. It walks the JSON token by token, rather
// than unmarshalling into a struct, so that every refusal can name the key
// and the line and column it sits at.
func parse(file string, data []byte) (*layer, error) {
	l := &layer{}
	if len(bytes.TrimSpace(data)) == 0 {
		return l, nil // an empty file says nothing; it is not a mistake
	}
	p := &parser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	// Check the syntax of the whole file first: the decoder's streaming
	// errors count offsets from the start of the value being read, so
	// they cannot place a mistake, while Unmarshal's count from the file's
	// start.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		return nil, p.syntax(0, err)
	}
	if err := p.top(l); err != nil {
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

// place returns the line and column of byte offset off.
func (p *parser) place(off int64) place {
	off = min(max(off, 0), int64(len(p.data)))
	before := p.data[:off]
	return place{
		line: 1 + bytes.Count(before, []byte("\n")),
		col:  1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]),
	}
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

// section reads the top-level object name, recording each key it holds
// in l.keys before each reads the key's value.
func (p *parser) section(l *layer, name string, each func(key string, at int64) error) error {
	return p.object(name, func(key string, at int64) error {
		l.keys = append(l.keys, name+"."+key)
		return each(key, at)
	})
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

func (p *parser) top(l *layer) error {
	return p.object("the settings file", func(key string, at int64) error {
		switch key {
		case "permissions":
			return p.permissions(l)
		case "plugins":
			return p.plugins(l)
		case "deadlines":
			return p.deadlines(l)
		case "limits":
			return p.limits(l)
		case "sandbox":
			return p.sandbox(l)
		case "mcp":
			return p.mcp(l)
		case "provider":
			return p.provider(l)
		case "turn":
			return p.turn(l)
		case "wasmCompile":
			return p.wasmCompile(l)
		case "env":
			return p.env(l)
		}
		return p.unknown(at, key, "the settings file", topKeys)
	})
}

func (p *parser) permissions(l *layer) error {
	l.patternAt = make(map[string][]place)
	return p.section(l, "permissions", func(key string, at int64) error {
		dst := l.perm(key)
		if dst == nil {
			return p.unknown(at, key, "permissions", permissionsKeys)
		}
		var where []place
		v, err := p.strs("permissions."+key, func(_, _ string, at int64) error {
			where = append(where, p.place(at))
			return nil
		})
		*dst = v
		l.patternAt[key] = where
		return err
	})
}

func (p *parser) plugins(l *layer) error {
	l.plugins = make(map[string]json.RawMessage)
	return p.section(l, "plugins", func(name string, at int64) error {
		raw, err := p.raw()
		l.plugins[name] = raw
		return err
	})
}

func (p *parser) deadlines(l *layer) error {
	l.deadlines = make(map[string]time.Duration)
	var scratch Deadlines
	return p.section(l, "deadlines", func(key string, at int64) error {
		if DeadlineField(&scratch, key) == nil {
			return p.unknown(at, key, "deadlines", deadlineKeys)
		}
		d, err := p.duration("deadlines."+key, deadlineZero[key])
		l.deadlines[key] = d
		return err
	})
}

func (p *parser) limits(l *layer) error {
	l.limits = make(map[string]int)
	var scratch Limits
	return p.section(l, "limits", func(key string, at int64) error {
		if limitField(&scratch, key) == nil {
			return p.unknown(at, key, "limits", limitKeys)
		}
		n, err := p.positive("limits." + key)
		if n != nil {
			l.limits[key] = *n
		}
		return err
	})
}

func (p *parser) mcp(l *layer) error {
	l.mcp = make(map[string]MCP)
	return p.section(l, "mcp", func(name string, at int64) error {
		path := "mcp." + name
		var m MCP
		err := fields(p, path, mcpKeys, map[string]*bool{"resources": &m.Resources, "sampling": &m.Sampling}, p.boolean)
		l.mcp[name] = m
		return err
	})
}

func (p *parser) sandbox(l *layer) error {
	l.sandbox = make(map[string]Sandbox)
	return p.section(l, "sandbox", func(name string, at int64) error {
		path := "sandbox." + name
		var sb Sandbox
		err := p.object(path, func(key string, at int64) error {
			switch key {
			case "writable":
				b, err := p.boolean(path + ".writable")
				sb.Writable = b
				return err
			case "memoryMiB":
				n, err := p.positive(path + ".memoryMiB")
				if n != nil {
					sb.MemoryMiB = *n
				}
				return err
			}
			return p.unknown(at, key, path, sandboxKeys)
		})
		l.sandbox[name] = sb
		return err
	})
}

func (p *parser) provider(l *layer) error {
	start := p.at()
	var modelAt int64
	err := p.section(l, "provider", func(key string, at int64) error {
		switch key {
		case "plugin":
			s, err := p.str("provider.plugin")
			if err != nil {
				return err
			}
			if _, _, ok := (ProviderChoice{Plugin: s}).PluginProvider(); !ok {
				return p.errAt(at, "provider.plugin must be \"<plugin>/<providerId>\", not %q", s)
			}
			l.provider.plugin = &s
			return nil
		case "model":
			vat := p.at()
			s, err := p.str("provider.model")
			if err != nil {
				return err
			}
			if s == "" {
				return p.errAt(vat, "provider.model must not be empty")
			}
			l.provider.model = &s
			modelAt = at
			return nil
		case "openai":
			o := &openAILayer{}
			l.provider.openai = o
			return p.openAI(o)
		}
		return p.unknown(at, key, "provider", providerKeys)
	})
	if err == nil && l.provider.plugin != nil && l.provider.openai != nil {
		return p.errAt(start, "provider: choose plugin or openai, not both")
	}
	if err == nil && l.provider.model != nil && l.provider.plugin == nil {
		if l.provider.openai != nil {
			return p.errAt(modelAt, "provider.model chooses among a plugin provider's models; an openai endpoint's model is provider.openai.model")
		}
		return p.errAt(modelAt, "provider.model needs provider.plugin beside it, naming the provider whose models it chooses among")
	}
	return err
}

func (p *parser) openAI(o *openAILayer) error {
	return p.object("provider.openai", func(key string, at int64) error {
		path := "provider.openai." + key
		var dst **string
		switch key {
		case "baseURL":
			dst = &o.baseURL
		case "model":
			dst = &o.model
		case "apiKeyEnv":
			dst = &o.apiKeyEnv
		default:
			return p.unknown(at, key, "provider.openai", openAIKeys)
		}
		vat := p.at()
		s, err := p.str(path)
		if err != nil {
			return err
		}
		switch key {
		case "baseURL":
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return p.errAt(vat, "%s must be an http or https URL, not %q", path, s)
			}
		case "model":
			if s == "" {
				return p.errAt(vat, "%s must not be empty", path)
			}
		case "apiKeyEnv":
			if !isEnvName(s) {
				// Do not echo the value: a person who pasted the key
				// itself here would see it again in a log.
				return p.errAt(vat, "%s must name an environment variable (like OPENAI_API_KEY) that holds the key, not the key itself", path)
			}
		}
		*dst = &s
		return nil
	})
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

func (p *parser) turn(l *layer) error {
	return p.section(l, "turn", func(key string, at int64) error {
		dst := l.turn(key)
		if dst == nil {
			return p.unknown(at, key, "turn", turnKeys)
		}
		n, err := p.positive("turn." + key)
		*dst = n
		return err
	})
}

func (p *parser) wasmCompile(l *layer) error {
	l.wasmCompile.counts = make(map[string]int)
	var scratch WasmCompile
	return p.section(l, "wasmCompile", func(key string, at int64) error {
		if key == "time" {
			d, err := p.duration("wasmCompile.time", "")
			l.wasmCompile.time = &d
			return err
		}
		if scratch.count(key) == nil {
			return p.unknown(at, key, "wasmCompile", wasmCompileKeys)
		}
		n, err := p.positive("wasmCompile." + key)
		if n != nil {
			l.wasmCompile.counts[key] = *n
		}
		return err
	})
}

func (p *parser) env(l *layer) error {
	e := &Env{}
	l.env = e
	return p.section(l, "env", func(key string, at int64) error {
		switch key {
		case "withhold":
			v, err := p.envNames("env.withhold")
			e.Withhold = v
			return err
		case "plugins":
			e.Plugins = make(map[string]PluginEnv)
			return p.object("env.plugins", func(name string, at int64) error {
				pe, err := p.pluginEnv("env.plugins." + name)
				e.Plugins[name] = pe
				return err
			})
		}
		return p.unknown(at, key, "env", envKeys)
	})
}

func (p *parser) pluginEnv(path string) (PluginEnv, error) {
	var pe PluginEnv
	err := fields(p, path, pluginEnvKeys, map[string]*[]string{"withhold": &pe.Withhold, "pass": &pe.Pass}, p.envNames)
	return pe, err
}

// fields reads the object at path whose keys (known, in the table's
// order) each hold a value read alike: into dst[key], with read.
func fields[T any](p *parser, path string, known []string, dst map[string]*T, read func(path string) (T, error)) error {
	return p.object(path, func(key string, at int64) error {
		d, ok := dst[key]
		if !ok {
			return p.unknown(at, key, path, known)
		}
		v, err := read(path + "." + key)
		*d = v
		return err
	})
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
