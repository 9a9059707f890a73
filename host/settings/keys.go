package settings

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// A Key is one key a settings file may hold, and what a person or an editor
// needs to know about it. The table Keys and KeySpecs return is the single
// source of truth about the file's keys: the parser walks a file by it
// (which keys exist, what each holds, OneOf and Requires), LoadLayered's
// trust rules are read from its Layer, and
// schema/settings.json and docs/settings.md are held to it (the first is
// generated from it, the second checked against it by docs/docs_test.go).
// The keys of deadlines and limits come from the fields of Deadlines and
// Limits themselves, so a new field is a new key.
type Key struct {
	// Path is the key, dotted from the top of the file: "deadlines.tool".
	// "<name>" stands for any plugin's name: "sandbox.<name>.memoryMiB".
	Path string
	// Kind is what the key holds.
	Kind Kind
	// Unit is what a count counts ("MiB", "bytes", "model responses"),
	// or "" where the kind says it all.
	Unit string
	// Default is the value in force where no file sets the key, as a file
	// would write it, or "" where there is none (a key that adds or chooses
	// something absent otherwise).
	Default string
	// Layer says which settings files the key is taken from. A key without
	// one follows the key above it; only sections whose keys differ
	// (permissions) leave it empty at the top.
	Layer Layer
	// OneOf marks a section of which a file may set at most one key,
	// leaving out keys that Require another.
	OneOf bool
	// Requires names a sibling key this one may only be set beside.
	Requires string
	// Zero, for a duration that may be "0", says what "0" means; any
	// other duration must be positive. The key then holds Never.
	Zero string
	// Doc says what the key does.
	Doc string

	// field, for a key a later file sets key by key at a path of its own,
	// is where in Settings its value goes: reading a file sets each such
	// key through it (Settings.apply), so no path is written twice.
	field func(*Settings) any
}

// Kind is what a settings key holds, as a settings file writes it.
type Kind string

const (
	KindSection  Kind = "object"                  // the keys listed under it, and no other
	KindNames    Kind = "object by plugin name"   // one entry per plugin name: the key Path + ".<name>"
	KindPatterns Kind = "array of patterns"       // permission patterns (package gate owns their grammar)
	KindDuration Kind = "duration"                // a positive Go duration string: "60s", "150ms", "1m30s"
	KindCount    Kind = "count"                   // a positive whole number
	KindBool     Kind = "boolean"                 // true or false
	KindString   Kind = "string"                  // a string that is not empty
	KindURL      Kind = "URL"                     // an http or https URL
	KindEnvName  Kind = "variable name"           // an environment variable's name (EnvNamePattern)
	KindEnvNames Kind = "array of variable names" // environment variables' names
	KindPaths    Kind = "array of paths"          // absolute paths, or paths from the home directory ("~/...")
	KindHosts    Kind = "array of host:port"      // "host:port" each, or "*" for any host (HostPattern)
	KindProvider Kind = "provider id"             // "<plugin>/<providerId>" (ProviderPattern)
	KindJSON     Kind = "any JSON"                // any JSON value, passed on as written
)

// Layer says which settings files a key is taken from (see the package
// doc's Trust section). Every key is taken from the user's file.
type Layer string

const (
	// LayerEvery: every settings file, an untrusted project's too: the
	// key can only add a refusal or a question.
	LayerEvery Layer = "every"
	// LayerTrusted: the user's file and a trusted project's, never an
	// untrusted project's.
	LayerTrusted Layer = "trusted"
	// LayerOwn: the user's file and a trusted project's; an untrusted
	// project's only for the project's own plugins.
	LayerOwn Layer = "own"
	// LayerUser: the user's file only, whether the project is trusted or
	// not.
	LayerUser Layer = "user"
)

// Describe says in words which files the layer takes a key from.
func (l Layer) Describe() string {
	switch l {
	case LayerEvery:
		return "any settings file, an untrusted project's too"
	case LayerTrusted:
		return "your file and a trusted project's, never an untrusted project's"
	case LayerOwn:
		return "your file and a trusted project's; an untrusted project's only for the project's own plugins"
	case LayerUser:
		return "your own ~/.bingo/settings.json only"
	}
	return string(l)
}

// Patterns of the string kinds, in the syntax common to Go's regexp and
// ECMAScript (what editors validate with). They are what the parser
// accepts, stated for schema/settings.json; the tests hold each to the
// function the parser calls.
const (
	// EnvNamePattern is an environment variable's name (isEnvName).
	EnvNamePattern = `^[A-Za-z_][A-Za-z0-9_]*$`
	// ProviderPattern is "<plugin>/<providerId>" (PluginProvider).
	ProviderPattern = `^[^/]+/[\s\S]+$`
	// DurationPattern is what time.ParseDuration reads, without a sign
	// other than "+"; DurationNonZero requires a digit other than 0, so
	// that "0s" is refused as the parser refuses it.
	DurationPattern = `^\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`
	DurationNonZero = `[1-9]`
	// URLPattern is the start of an http or https URL with a host.
	URLPattern = `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]+`
	// HostPattern is what a plugin may connect to (isHostPort): "*", or
	// a host (a name, an address, [an IPv6 address], or * for any) and a
	// port.
	HostPattern = `^(\*|(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]]+):[0-9]{1,5})$`
)

// isHostPort reports whether s is "*" or "host:port" (HostPattern).
func isHostPort(s string) bool {
	if s == "*" {
		return true
	}
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || len(s)-i-1 < 1 || len(s)-i-1 > 5 {
		return false
	}
	for _, c := range []byte(s[i+1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	host := s[:i]
	if host[0] == '[' {
		if len(host) < 3 || host[len(host)-1] != ']' {
			return false
		}
		for _, c := range []byte(host[1 : len(host)-1]) {
			if !(c == ':' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	return !strings.ContainsAny(host, " \t\n\r\v\f:[]")
}

// deadlineDocs and limitDocs say what each field of Deadlines and Limits
// bounds, by JSON key. A field without an entry fails the tests and the
// schema's generation.
var (
	deadlineDocs = map[string]string{
		"initialize":    "The handshake: starting the plugin (for a wasm plugin, its module's start function too) until its answer to initialize. It bounds every respawn the same way. A plugin whose command is a package runner that may install it first (npx, pnpx, bunx, uvx, pipx run, pnpm dlx, uv tool run) gets at least 2m.",
		"tool":          "A tool/call, from the call to its answer: a respawn it waits for and the person's answers to the tool's questions count against it. A cancelled call is still waited for until then.",
		"command":       "A command/run.",
		"complete":      "A command/complete.",
		"contributor":   "A context/contribute. A contributor past it is dropped from that round, with a notice; the turn goes on.",
		"compactor":     "A compactor/compact. Past it the built-in compaction runs instead.",
		"provider":      "A provider/stream, until its first provider/delta (or its answer); for provider.openai, until the first chunk of the answer, connecting and the headers included.",
		"providerIdle":  "A provider/stream's silence between two provider/delta notifications, and after the last one until the answer; for provider.openai, between two chunks.",
		"providerTotal": "A provider/stream's whole response, however lively: past it the stream is cancelled (provider/cancel; for provider.openai, the request) and the turn fails.",
		"hook":          "A hook/decide. A hook past it decides nothing (as if it answered continue), with a notice.",
		"service":       "A service/call to a plugin's service, from the host or from another plugin.",
		"idleStop":      "How long a running plugin may have nothing to do (no request in flight, nothing it owes an answer to) before it is stopped, quietly: no notice, and the next use starts it again. \"0\" never stops it: plugins then run for as long as bingo does.",
		"grace":         "How long a plugin may answer nothing after a request's deadline passes unanswered (or after its last answer, if later) before it is killed as wedged (and respawned by the next use), however many newer requests are within their deadlines; also how long a notification, or the answer to one of the plugin's own requests, may stay blocked on a plugin that does not read its stdin.",
	}
	// deadlineZero are the deadlines that may be "0", and what it means.
	deadlineZero = map[string]string{
		"idleStop": "never",
	}
	limitDocs = map[string]string{
		"providerResponseMiB": "One response of a plugin's provider: its provider/delta notifications, counted as they cross the wire (for provider.openai, the bytes of the response body). Past it the stream is cancelled (provider/cancel; for provider.openai, the request) and the turn fails.",
	}
	// limitUnits are the units of Limits' fields, by JSON key.
	limitUnits = map[string]string{"providerResponseMiB": "MiB"}
)

// Never is what a duration key whose Zero is set holds when a file sets it
// to "0": longer than any run, so the timer it sets never fires.
const Never = time.Duration(math.MaxInt64)

// deadlineKeys and limitKeys are the JSON keys of Deadlines' and Limits'
// fields, in field order: each field's name in lower camel case.
var (
	deadlineKeys = fieldKeys[Deadlines, time.Duration]()
	limitKeys    = fieldKeys[Limits, int]()
)

// fieldKeys returns the JSON keys of S's fields, each the field's name in
// lower camel case. Every field must be an F: a field of another type
// could not be read from a settings file.
func fieldKeys[S, F any]() []string {
	t, want := reflect.TypeFor[S](), reflect.TypeFor[F]()
	keys := make([]string, t.NumField())
	for i := range keys {
		f := t.Field(i)
		if f.Type != want {
			panic(fmt.Sprintf("settings: %s.%s is a %s; a settings key can set only a %s", t, f.Name, f.Type, want))
		}
		r := []rune(f.Name)
		r[0] = unicode.ToLower(r[0])
		keys[i] = string(r)
	}
	return keys
}

// field returns the field of *s that key (one of keys, in field order)
// names, or nil.
func field[S, F any](s *S, keys []string, key string) *F {
	for i, k := range keys {
		if k == key {
			return reflect.ValueOf(s).Elem().Field(i).Addr().Interface().(*F)
		}
	}
	return nil
}

// DeadlineField returns the field of *d that key (deadlines.<key>) names,
// or nil for an unknown key.
func DeadlineField(d *Deadlines, key string) *time.Duration {
	return field[Deadlines, time.Duration](d, deadlineKeys, key)
}

// limitField returns the Limits field a JSON key names, or nil for an
// unknown key.
func limitField(l *Limits, key string) *int { return field[Limits, int](l, limitKeys, key) }

// formatDuration writes d as a person would: "1m", "30s", "150ms".
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d >= time.Second && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// table is every key, in the order a file is described in.
var table = buildTable()

func buildTable() []Key {
	def := Default()
	t := []Key{
		{Path: "permissions", Kind: KindSection,
			Doc: "The rules the permission gate decides tool calls by. A pattern is a tool's exact name (plugin__<plugin>__<tool>) or a prefix ending in one *. A deny rule wins over an ask rule, an ask rule over an allow rule, and a call no rule decides is put to the person. Each list is unioned across the files, in order: a later file adds rules and never removes one."},
		{Path: "permissions.allow", Kind: KindPatterns, Layer: LayerTrusted,
			Doc: "Tools that run without asking. An allow rule from a settings file never applies to the tools of an untrusted project's plugins (--allow does)."},
		{Path: "permissions.deny", Kind: KindPatterns, Layer: LayerEvery,
			Doc: "Tools that never run: the call is refused and the model reads why."},
		{Path: "permissions.ask", Kind: KindPatterns, Layer: LayerEvery,
			Doc: "Tools the person is asked about even where an allow rule matches."},

		{Path: "plugins", Kind: KindNames, Layer: LayerOwn,
			Doc: "Each plugin's own configuration, by plugin name."},
		{Path: "plugins.<name>", Kind: KindJSON,
			Doc: "Sent to the plugin named <name> as initialize.config, exactly as written (the manifest's config field documents its shape). A later file replaces it whole. An untrusted project plugin does not get your plugins.<name>."},

		{Path: "deadlines", Kind: KindSection, Layer: LayerTrusted,
			Doc: "How long each crossing to a plugin may take, as a duration (\"60s\", \"150ms\", \"1m30s\"). Past its deadline the call fails; a later file wins key by key."},
	}
	for _, key := range deadlineKeys {
		t = append(t, Key{Path: "deadlines." + key, Kind: KindDuration,
			Default: formatDuration(*DeadlineField(&def.Deadlines, key)), Zero: deadlineZero[key], Doc: deadlineDocs[key],
			field: func(s *Settings) any { return DeadlineField(&s.Deadlines, key) }})
	}
	t = append(t, Key{Path: "limits", Kind: KindSection, Layer: LayerTrusted,
		Doc: "How much one crossing to a plugin may make the host hold; a later file wins key by key."})
	for _, key := range limitKeys {
		t = append(t, Key{Path: "limits." + key, Kind: KindCount, Unit: limitUnits[key],
			Default: strconv.Itoa(*limitField(&def.Limits, key)), Doc: limitDocs[key],
			field: func(s *Settings) any { return limitField(&s.Limits, key) }})
	}
	t = append(t, []Key{
		{Path: "sandbox", Kind: KindNames, Layer: LayerUser,
			Doc: "What the person grants a plugin beyond the default sandbox, by plugin name (wasm: the working directory read-only, no environment but the manifest's entry.env, no network, " + strconv.Itoa(wasm.DefaultMemoryLimitMiB) + " MiB of memory; an exec plugin or stdio MCP server on Linux: the system, what it runs from and the working directory read-only, its data directory and a private temporary directory writable, no network; see docs/plugins.md). An untrusted project plugin never gets the grant made for its name."},
		{Path: "sandbox.require", Kind: KindBool, Default: "false",
			Doc: "Refuse to start an exec plugin or stdio MCP server that would run with less than the default sandbox (no Landlock; no PID namespace, or no network namespace where it has no network), instead of starting it with less and saying so once. (So no plugin named require can be granted anything here.)"},
		{Path: "sandbox.<name>", Kind: KindSection,
			Doc: "The grant for the plugin named <name>. A later file replaces it whole."},
		{Path: "sandbox.<name>.writable", Kind: KindBool, Default: "false",
			Doc: "Let the plugin write the working directory, not only read it (a wasm plugin: mount it read-write)."},
		{Path: "sandbox.<name>.read", Kind: KindPaths,
			Doc: "Further files and directories an exec plugin may read, with everything beneath a directory."},
		{Path: "sandbox.<name>.write", Kind: KindPaths,
			Doc: "Further files and directories an exec plugin may read and write, create in and remove from."},
		{Path: "sandbox.<name>.network", Kind: KindHosts,
			Doc: "What an exec plugin may connect to: \"host:port\" each (through the egress proxy bingo runs, see docs/plugins.md), or \"*\" for the whole network."},
		{Path: "sandbox.<name>.memoryMiB", Kind: KindCount, Unit: "MiB", Default: strconv.Itoa(wasm.DefaultMemoryLimitMiB),
			Doc: "The most memory a wasm module may have; past it the instance dies and the next use starts it again."},

		{Path: "mcp", Kind: KindNames, Layer: LayerUser,
			Doc: "What the person allows an MCP server plugin (entry.protocol \"mcp\") beyond its tools, prompts and logs, by plugin name. An untrusted project plugin never gets what is allowed for its name."},
		{Path: "mcp.<name>", Kind: KindSection,
			Doc: "What the MCP server plugin named <name> is allowed. A later file replaces it whole."},
		{Path: "mcp.<name>.resources", Kind: KindBool, Default: "false",
			Doc: "Offer the server's text resources to the model as context before each model request (a context contributor named resources)."},
		{Path: "mcp.<name>.sampling", Kind: KindBool, Default: "false",
			Doc: "Let the server ask the configured provider for a model response (MCP sampling/createMessage); off, every such request is refused. Only while it answers one of its tool calls, and at most turn.maxSteps times for one call: past that its requests are refused, with one notice."},
		{Path: "mcp.<name>.maxTokens", Kind: KindCount, Unit: "tokens", Default: strconv.Itoa(mcpbridge.DefaultMaxTokens),
			Doc: "The most tokens one of the server's sampling requests may have the model answer in: a request asking more, or naming no limit, is held to it."},

		{Path: "provider", Kind: KindSection, Layer: LayerTrusted, OneOf: true,
			Doc: "The model provider a turn uses: a plugin's provider or an OpenAI-compatible endpoint, never both in one file. A file that sets plugin drops an earlier file's openai choice, and the other way round. There is none by default: a turn without one fails, saying how to set one."},
		{Path: "provider.plugin", Kind: KindProvider,
			Doc: "A plugin's provider: \"<plugin>/<providerId>\", the id the plugin declares under providers."},
		{Path: "provider.model", Kind: KindString, Requires: "plugin",
			Doc: "Which of the plugin provider's declared models to use; it reaches provider/stream as model. Only beside provider.plugin; a model the provider does not declare is an error naming the ones it does. Left out, the provider chooses (model is left out of the request)."},
		{Path: "provider.openai", Kind: KindSection,
			Doc: "An OpenAI-compatible Chat Completions endpoint. Its keys override an earlier file's openai keys one by one, so a project can change only the model."},
		{Path: "provider.openai.baseURL", Kind: KindURL,
			Doc: "The endpoint's base URL, http or https: https://api.openai.com/v1, http://localhost:11434/v1. Required."},
		{Path: "provider.openai.model", Kind: KindString,
			Doc: "The model's name, as the server knows it. Required."},
		{Path: "provider.openai.apiKeyEnv", Kind: KindEnvName,
			Doc: "The environment variable the API key is read from at each request, never the key itself; leave it out for a server that needs no key. The key is sent only to the baseURL your own file pairs with this variable, and exec plugins do not see the variable unless env.plugins.<name>.pass names it."},

		{Path: "turn", Kind: KindSection, Layer: LayerTrusted,
			Doc: "Bounds on one turn; a later file wins key by key."},
		{Path: "turn.maxSteps", Kind: KindCount, Unit: "model responses", Default: strconv.Itoa(def.Turn.MaxSteps),
			field: func(s *Settings) any { return &s.Turn.MaxSteps },
			Doc:   "How many model responses one turn may take. Past it the turn stops and fails (bingo exits 1): the model did not finish."},
		{Path: "turn.compactAt", Kind: KindCount, Unit: "bytes", Default: strconv.Itoa(def.Turn.CompactAt),
			field: func(s *Settings) any { return &s.Turn.CompactAt },
			Doc:   "The conversation's size at which it is compacted before the next model request: the bytes of every message's content and of its tool calls' names and inputs (the system prompt is not counted). The built-in compaction keeps the newest messages that fit in half of it, and when the current turn alone does not fit, cuts that turn's largest tool results until it does."},
		{Path: "turn.toolResultMax", Kind: KindCount, Unit: "bytes", Default: strconv.Itoa(def.Turn.ToolResultMax),
			field: func(s *Settings) any { return &s.Turn.ToolResultMax },
			Doc:   "The most of one tool result the model is sent, in bytes of its text (about 4 bytes a token: the default is near 25000 tokens). A longer result reaches the model cut: its start, then a line saying how much was left out, where the whole is, and how to read it in parts (bingo__read_result); the whole is kept in ~/.bingo/data/results/, and a notice on stderr names the file."},
		{Path: "turn.toolsMax", Kind: KindCount, Unit: "bytes", Default: strconv.Itoa(def.Turn.ToolsMax),
			field: func(s *Settings) any { return &s.Turn.ToolsMax },
			Doc:   "The most bytes of tool definitions (each tool's name, description and input schema as JSON; about 4 bytes a token: the default is near 15000 tokens) a model request offers in full. Past it, the tools the conversation has called and then whole plugins, smallest first, are offered while they fit; the model finds the rest with the built-in bingo__tool_search, and a tool it found is offered from its next request of the turn on. bingo plugins shows what each plugin's definitions cost."},
	}...)
	t = append(t, Key{Path: wasmCompileKey, Kind: KindSection, Layer: LayerTrusted,
		Doc: "What compiling one wasm module may cost, for your plugins and a trusted project's: an untrusted project's plugins always get the defaults, and at most 25s of wall time. A module past a bound is refused with a notice naming the key that raises it. A later file wins key by key."})
	for _, k := range wasmCompileKeys {
		key := Key{Path: wasmCompileKey + "." + k.key, Unit: k.unit, Doc: k.doc,
			field: func(s *Settings) any { return k.field(&s.WasmCompile) }}
		switch v := k.field(&def.WasmCompile).(type) {
		case *int:
			key.Kind, key.Default = KindCount, strconv.Itoa(*v)
		case *time.Duration:
			key.Kind, key.Default = KindDuration, formatDuration(*v)
		}
		t = append(t, key)
	}
	return append(t, []Key{
		{Path: "untrustedWasm", Kind: KindSection, Layer: LayerUser,
			Doc: "What the wasm plugins of a project you have not trusted may cost the host together, however many it ships."},
		{Path: "untrustedWasm.memoryMiB", Kind: KindCount, Unit: "MiB", Default: strconv.Itoa(def.UntrustedWasm.MemoryMiB),
			field: func(s *Settings) any { return &s.UntrustedWasm.MemoryMiB },
			Doc:   "The memory they share: each grows into it as well as up to its own " + strconv.Itoa(wasm.DefaultMemoryLimitMiB) + " MiB, and one that would pass what the others left dies alone, with a notice, and starts again at its next use."},

		{Path: "env", Kind: KindSection, Layer: LayerUser,
			Doc: "Which of the host's environment variables exec plugins do not see (a wasm plugin sees only its manifest's entry.env). Every entry is a variable's name, never its value."},
		{Path: "env.withhold", Kind: KindEnvNames,
			Doc: "Kept from every exec plugin. Unioned across files."},
		{Path: "env.plugins", Kind: KindNames,
			Doc: "What one plugin, by name, does not see beyond env.withhold, and what it sees after all."},
		{Path: "env.plugins.<name>", Kind: KindSection,
			Doc: "A later file replaces it whole."},
		{Path: "env.plugins.<name>.withhold", Kind: KindEnvNames,
			Doc: "Kept from the plugin named <name> as well."},
		{Path: "env.plugins.<name>.pass", Kind: KindEnvNames,
			Doc: "Given to the plugin named <name> even where env.withhold, its own withhold or the host's default (the provider.openai.apiKeyEnv variable) would keep it. Not given to an untrusted project plugin of that name."},
	}...)
}

// Keys returns the dotted path of every key a settings file may hold,
// sections included ("deadlines", "deadlines.tool", "sandbox.<name>"), in
// the order a file is described in. "<name>" stands for a plugin's name.
func Keys() []string {
	out := make([]string, len(table))
	for i, k := range table {
		out[i] = k.Path
	}
	return out
}

// KeySpecs returns every key a settings file may hold, with what is known
// about it, in the order of Keys. Every key has its Layer set, inherited
// from the key above it where the table leaves it out (only permissions
// has none: its keys differ).
func KeySpecs() []Key {
	out := make([]Key, len(table))
	for i, k := range table {
		if k.Layer == "" {
			k.Layer = layerOf(k.Path)
		}
		out[i] = k
	}
	return out
}

// lookup returns the key at path, in the table's spelling.
func lookup(path string) (Key, bool) {
	for _, k := range table {
		if k.Path == path {
			return k, true
		}
	}
	return Key{}, false
}

// children returns the keys directly under parent ("" for the top), by
// their last part: children("provider") is plugin, openai.
func children(parent string) []string {
	var out []string
	for _, k := range table {
		p, last := "", k.Path
		if i := strings.LastIndexByte(k.Path, '.'); i >= 0 {
			p, last = k.Path[:i], k.Path[i+1:]
		}
		if p == parent {
			out = append(out, last)
		}
	}
	return out
}

// layerOf returns the Layer of the key at path, in the table's spelling:
// its own, or the nearest one above it.
func layerOf(path string) Layer {
	for {
		if k, ok := lookup(path); ok && k.Layer != "" {
			return k.Layer
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return ""
		}
		path = path[:i]
	}
}

// spelling returns the table's path of the key top.sub of a file: sub is
// a plugin's name under a section of names ("plugins.deploy" is
// "plugins.<name>"), unless the section has a key of that name itself
// ("sandbox.require").
func spelling(top, sub string) string {
	if _, fixed := lookup(top + "." + sub); fixed {
		return top + "." + sub
	}
	if k, _ := lookup(top); k.Kind == KindNames {
		return top + ".<name>"
	}
	return top + "." + sub
}

// Example returns a value of the key's kind, as a file would write it:
// what the tests and the documentation's examples use.
func (k Key) Example() string {
	switch k.Kind {
	case KindSection, KindNames:
		return "{}"
	case KindPatterns:
		return `["plugin__wordcount__count"]`
	case KindDuration:
		return `"1m30s"`
	case KindCount:
		return "3"
	case KindBool:
		return "true"
	case KindString:
		return `"gpt-4o-mini"`
	case KindURL:
		return `"https://api.openai.com/v1"`
	case KindEnvName:
		return `"OPENAI_API_KEY"`
	case KindEnvNames:
		return `["GITHUB_TOKEN"]`
	case KindPaths:
		return `["~/.cache/tool"]`
	case KindHosts:
		return `["registry.npmjs.org:443"]`
	case KindProvider:
		return `"scripted-model/model"`
	case KindJSON:
		return `{"any": ["json", 1]}`
	}
	panic("settings: no example of kind " + string(k.Kind))
}

// File returns a whole settings file that sets the key to value (JSON, as
// a file writes it), "<name>" standing for the plugin "x". A key that
// Requires a sibling is set beside it, the sibling at its Example: a file
// the parser and schema/settings.json both take as it is, for the tests
// of either and for examples.
func (k Key) File(value string) string {
	if k.Path == "" {
		return value
	}
	parts := strings.Split(k.Path, ".")
	if k.Requires != "" {
		sib, ok := lookup(strings.Join(parts[:len(parts)-1], ".") + "." + k.Requires)
		if !ok {
			panic("settings: " + k.Path + " requires a key the table does not list")
		}
		value = fmt.Sprintf(`{%q: %s, %q: %s}`, k.Requires, sib.Example(), parts[len(parts)-1], value)
		parts = parts[:len(parts)-1]
	}
	for i := len(parts) - 1; i >= 0; i-- {
		name := parts[i]
		if name == "<name>" {
			name = "x"
		}
		value = fmt.Sprintf(`{%q: %s}`, name, value)
	}
	return value
}
