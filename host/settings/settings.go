package settings

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Settings is the merged result of every settings layer. Its zero value is
// not the default: use Default, or Load.
type Settings struct {
	// Permissions are the rules package gate decides tool calls by.
	Permissions Permissions
	// Plugins holds plugins.<name>: the config slice sent to that plugin as
	// initialize.config, exactly as the person wrote it. A plugin with no
	// entry gets no config.
	Plugins map[string]json.RawMessage
	// Deadlines bound every crossing to a plugin, per kind.
	Deadlines Deadlines
	// Limits bound what one crossing may make the host hold.
	Limits Limits
	// Sandbox holds the wasm grants per plugin name. Only the person grants
	// them, never a manifest; a plugin with no entry gets the narrowest
	// sandbox.
	Sandbox map[string]Sandbox
	// SandboxRequire refuses to start an exec plugin that would run with
	// less than the default sandbox (sandbox.require).
	SandboxRequire bool
	// MCP holds what the person allows each MCP server plugin beyond its
	// tools, prompts and logs, by plugin name. Like Sandbox, only the
	// person's own file grants it.
	MCP map[string]MCP
	// Provider is the model provider a turn uses.
	Provider ProviderChoice
	// Turn bounds a turn.
	Turn Turn
	// Env says which of the host's environment variables exec plugins do
	// not see.
	Env Env
	// WasmCompile bounds what compiling one wasm module may cost, for the
	// person's plugins and a trusted project's; an untrusted project's
	// plugins always get DefaultWasmCompile.
	WasmCompile WasmCompile
	// UntrustedWasm bounds what an untrusted project's wasm plugins cost
	// the host together. Only the person's own file sets it.
	UntrustedWasm UntrustedWasm
}

// UntrustedWasm bounds an untrusted project's wasm plugins together: in
// JSON, untrustedWasm.memoryMiB is the memory they share.
type UntrustedWasm struct {
	MemoryMiB int
}

// DefaultUntrustedMemoryMiB is the memory an untrusted project's wasm
// plugins share where settings say nothing: two plugins at the sandbox's
// own limit, whatever number of them a repository ships.
const DefaultUntrustedMemoryMiB = 2 * wasm.DefaultMemoryLimitMiB

// WasmCompile bounds what compiling one wasm module may cost the host
// (package wasm's Bounds): the module's size, a function's size and
// blocks, and the time and memory of the compilation. In JSON each is
// under wasmCompile.<key> (wasmCompileKeys).
type WasmCompile struct {
	ModuleMiB, FunctionKiB, BlocksPerFunction int
	Time                                      time.Duration
	MemoryMiB                                 int
}

// DefaultWasmCompile returns the compile bounds used where settings say
// nothing: the wasm transport's own defaults.
func DefaultWasmCompile() WasmCompile {
	b := wasm.DefaultBounds()
	return WasmCompile{ModuleMiB: b.ModuleMiB, FunctionKiB: b.FunctionKiB, BlocksPerFunction: b.BlocksPerFunction,
		Time: b.CompileTime, MemoryMiB: b.CompileMemoryMiB}
}

// Bounds are w as the wasm transport takes them: a refusal names the
// key of this section that raises the bound it met.
func (w WasmCompile) Bounds() wasm.Bounds {
	return wasm.Bounds{ModuleMiB: w.ModuleMiB, FunctionKiB: w.FunctionKiB, BlocksPerFunction: w.BlocksPerFunction,
		CompileTime: w.Time, CompileMemoryMiB: w.MemoryMiB, Key: wasmCompileKey}
}

// wasmCompileKey is the section of the compile bounds; each key under it
// is named as the wasm transport names the bound it raises (wasm.Bound*),
// which is also what a refusal names after it (Bounds.Key).
const wasmCompileKey = "wasmCompile"

// wasmCompileKeys are the keys of wasmCompile, in the order a file is
// described in, each with its field of WasmCompile: a *int for a count, a
// *time.Duration for the time.
var wasmCompileKeys = []struct {
	key, unit, doc string
	field          func(*WasmCompile) any
}{
	{wasm.BoundModuleMiB, "MiB", "The module file's size.", func(w *WasmCompile) any { return &w.ModuleMiB }},
	{wasm.BoundFunctionKiB, "KiB", "One function's code.", func(w *WasmCompile) any { return &w.FunctionKiB }},
	{wasm.BoundBlocks, "blocks", "The block, if and loop instructions of one function, a loop counting four: wazero's compile time grows with their square.", func(w *WasmCompile) any { return &w.BlocksPerFunction }},
	{wasm.BoundTime, "", "Compiling a module not compiled before, which runs in a process of its own that is stopped when it runs out: its CPU time on Linux (with five times as much wall time, for a busy machine), its wall time elsewhere. A module that ran out of CPU time (or an untrusted project's module that ran out of its 25s) is remembered and not compiled again under the same bounds.", func(w *WasmCompile) any { return &w.Time }},
	{wasm.BoundMemory, "MiB", "That process's resident memory (watched on Linux); a module that needs more is remembered as one that ran out of time is.", func(w *WasmCompile) any { return &w.MemoryMiB }},
}

// Permissions are tool-name patterns, as written in permissions.allow,
// permissions.deny and permissions.ask. Package gate owns their meaning.
type Permissions struct {
	Allow, Deny, Ask []string
}

// Deadlines is how long each kind of crossing to a plugin may take: the
// type the bridge takes, so what the person writes is exactly what the
// bridge enforces. In JSON each is a Go duration string ("2s", "150ms") under
// deadlines.<kind>, where kind is the field name in lower camel case
// ("providerIdle"). Provider bounds the wait for a stream's first delta,
// ProviderIdle the silence between deltas, ProviderTotal the whole stream.
type Deadlines = bounds.Deadlines

// DefaultDeadlines returns the deadlines used where settings say nothing.
func DefaultDeadlines() Deadlines { return bounds.DefaultDeadlines() }

// Limits bound what one crossing to a plugin may make the host hold: the
// type the bridge takes, as Deadlines is. In JSON each is a positive whole
// number under limits.<key>, the field name in lower camel case
// ("providerResponseMiB").
type Limits = bounds.Limits

// DefaultLimits returns the limits used where settings say nothing.
func DefaultLimits() Limits { return bounds.DefaultLimits() }

// Sandbox is what the person grants one wasm plugin beyond the default
// sandbox (the working directory read-only, no environment, no network).
type Sandbox struct {
	// Writable mounts the working directory read-write instead of read-only.
	Writable bool
	// MemoryMiB caps the module's memory. Zero means the wasm transport's
	// default (wasm.DefaultMemoryLimitMiB).
	MemoryMiB int
	// Read and Write are further paths an exec plugin may read, or also
	// write (a wasm plugin's mounts are the host's alone).
	Read, Write []string
	// Network is what an exec plugin may connect to: "host:port" each,
	// or "*" for anything.
	Network []string
}

// MCP is what the person allows one MCP server plugin (see package
// mcpbridge) beyond its tools, prompts and logs.
type MCP struct {
	// Resources offers the server's resources to the model as context.
	Resources bool
	// Sampling lets the server ask the configured provider for a model
	// response (sampling/createMessage); off, every such request is
	// refused.
	Sampling bool
	// MaxTokens caps what one of the server's sampling requests may ask
	// of the model; 0 is mcpbridge's default.
	MaxTokens int
}

// ProviderChoice is the model provider a turn uses: a plugin's provider, or
// an OpenAI-compatible endpoint. At most one of the two is set; neither set
// means no provider is configured.
type ProviderChoice struct {
	// Plugin is "<plugin>/<providerId>".
	Plugin string
	// Model chooses among the plugin provider's declared models; it
	// reaches provider/stream as the request's model. "" sends none.
	Model  string
	OpenAI *OpenAI
}

// PluginProvider splits Plugin into the plugin's name and the provider's
// id. ok is false when the choice is not a plugin's provider.
func (c ProviderChoice) PluginProvider() (plugin, id string, ok bool) {
	plugin, id, ok = strings.Cut(c.Plugin, "/")
	if !ok || plugin == "" || id == "" {
		return "", "", false
	}
	return plugin, id, true
}

// OpenAI is an OpenAI-compatible chat endpoint.
type OpenAI struct {
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the API key: the key
	// itself never sits in a settings file, which people commit.
	APIKeyEnv string
}

// Turn bounds one turn of the conversation loop.
type Turn struct {
	// MaxSteps is how many model responses one turn may take.
	MaxSteps int
	// CompactAt is the conversation size, in bytes (the content of every
	// message and the names and inputs of its tool calls), at which the
	// conversation is compacted before the next model call.
	CompactAt int
	// ToolResultMax is the most bytes of one tool result the model is
	// sent; a longer one is cut, and kept whole in a file.
	ToolResultMax int
	// ToolsMax is the most bytes of tool definitions a model request
	// offers in full; past it the model finds the others with
	// bingo__tool_search.
	ToolsMax int
}

// Default returns the settings in force when no file says anything.
func Default() Settings {
	return Settings{
		Deadlines: DefaultDeadlines(),
		Limits:    DefaultLimits(),
		Turn:      Turn{MaxSteps: 20, CompactAt: 200000, ToolResultMax: 100000, ToolsMax: 60000},

		WasmCompile:   DefaultWasmCompile(),
		UntrustedWasm: UntrustedWasm{MemoryMiB: DefaultUntrustedMemoryMiB},
	}
}

// Files returns the settings files for a home directory and a project
// directory, in the order Load wants them: the user's first, the
// project's second so that it wins. An empty project yields only the
// user's file.
func Files(home, project string) []string {
	files := []string{filepath.Join(home, ".bingo", "settings.json")}
	if project != "" {
		files = append(files, filepath.Join(project, ".bingo", "settings.json"))
	}
	return files
}

// Load reads the settings files in order, a later file winning (see the
// package doc for the merge rule), over Default. Every file is trusted
// alike: for a project's file, which may not be, use LoadLayered. A file
// that does not exist is skipped. A file that cannot be read, is larger
// than MaxFileSize or is malformed adds one *Error to errs and contributes
// nothing; the other files still apply, so the returned Settings is always
// usable.
func Load(files ...string) (s Settings, errs []error) {
	s = Default()
	for _, file := range files {
		l, err := read(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l != nil {
			s.apply(l)
		}
	}
	return s, errs
}

// Error is why one settings file was not applied.
type Error struct {
	File string
	// Line and Col (1-based, Col in characters) place the mistake; both
	// are 0 when the file could not be read at all.
	Line, Col int
	Err       error
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Col, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// apply merges one layer over s, each key as its entry in the table of
// keys says a later file's value merges.
func (s *Settings) apply(l *layer) {
	s.Permissions.Allow = union(s.Permissions.Allow, strs(l, "permissions.allow"))
	s.Permissions.Deny = union(s.Permissions.Deny, strs(l, "permissions.deny"))
	s.Permissions.Ask = union(s.Permissions.Ask, strs(l, "permissions.ask"))
	for _, name := range l.names["plugins"] {
		raw, _ := get[json.RawMessage](l, "plugins."+name)
		put(&s.Plugins, name, raw)
	}
	setFrom(l, "sandbox.require", &s.SandboxRequire)
	for _, name := range l.names["sandbox"] {
		at := "sandbox." + name + "."
		var sb Sandbox
		setFrom(l, at+"writable", &sb.Writable)
		setFrom(l, at+"memoryMiB", &sb.MemoryMiB)
		sb.Read, sb.Write, sb.Network = strs(l, at+"read"), strs(l, at+"write"), strs(l, at+"network")
		put(&s.Sandbox, name, sb)
	}
	for _, name := range l.names["mcp"] {
		at := "mcp." + name + "."
		var m MCP
		setFrom(l, at+"resources", &m.Resources)
		setFrom(l, at+"sampling", &m.Sampling)
		setFrom(l, at+"maxTokens", &m.MaxTokens)
		put(&s.MCP, name, m)
	}
	s.Env.Withhold = union(s.Env.Withhold, strs(l, "env.withhold"))
	for _, name := range l.names["env.plugins"] {
		at := "env.plugins." + name + "."
		put(&s.Env.Plugins, name, PluginEnv{Withhold: strs(l, at+"withhold"), Pass: strs(l, at+"pass")})
	}
	for _, k := range table {
		if k.field == nil {
			continue
		}
		switch dst := k.field(s).(type) {
		case *int:
			setFrom(l, k.Path, dst)
		case *time.Duration:
			setFrom(l, k.Path, dst)
		default:
			panic(fmt.Sprintf("settings: %s is bound to a %T", k.Path, dst))
		}
	}
	switch {
	case l.has("provider.plugin"):
		s.Provider = ProviderChoice{}
		setFrom(l, "provider.plugin", &s.Provider.Plugin)
		setFrom(l, "provider.model", &s.Provider.Model)
	case l.has("provider.openai"):
		var o OpenAI
		if s.Provider.OpenAI != nil {
			o = *s.Provider.OpenAI
		}
		setFrom(l, "provider.openai.baseURL", &o.BaseURL)
		setFrom(l, "provider.openai.model", &o.Model)
		setFrom(l, "provider.openai.apiKeyEnv", &o.APIKeyEnv)
		s.Provider = ProviderChoice{OpenAI: &o}
	}
}

// setFrom sets *dst to the value of the key at path, if the file sets it.
func setFrom[T any](l *layer, path string, dst *T) {
	if v, ok := get[T](l, path); ok {
		*dst = v
	}
}

// strs returns the list at path, nil when the file does not set it.
func strs(l *layer, path string) []string {
	v, _ := get[[]string](l, path)
	return v
}

// put sets (*dst)[name] to v whole, making *dst when it is nil.
func put[V any](dst *map[string]V, name string, v V) {
	if *dst == nil {
		*dst = make(map[string]V)
	}
	(*dst)[name] = v
}

// union appends to a the elements of b it does not hold yet. It never
// aliases a's backing array, so Settings values do not share slices.
func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, x := range append(a[:len(a):len(a)], b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
