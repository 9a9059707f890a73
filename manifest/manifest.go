package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// FileName is the name of the manifest inside a plugin directory.
const FileName = "plugin.json"

// MaxSize is the largest plugin.json accepted, in bytes. A manifest is a few
// hundred bytes; the cap keeps a stray huge file from being read whole.
const MaxSize = 1 << 20

// RootVar is the one variable expanded in a manifest's entry.
const RootVar = "${PLUGIN_ROOT}"

// The transports an Entry selects, as returned by [Entry.Transport].
const (
	TransportExec = "exec"
	TransportWasm = "wasm"
	TransportHTTP = "http" // a remote MCP server over Streamable HTTP
)

// Manifest is one validated plugin.json.
type Manifest struct {
	Name    string          // equals the directory's name
	Version string          // non-blank, no particular scheme
	Entry   Entry           // with ${PLUGIN_ROOT} already expanded everywhere
	Config  json.RawMessage // the optional "config" JSON Schema (documentation only; never validated against); nil if absent
	// Permissions is what the plugin says it needs beyond the default
	// sandbox (the optional "permissions").
	Permissions Permissions
	Root        string // absolute directory the manifest was read from (= ${PLUGIN_ROOT})
	File        string // absolute path of plugin.json
	Layer       string // name of the layer it came from ("user", "project", "dir")
	// Server is the server's name as an MCP configuration file (.mcp.json)
	// spells it, for a plugin read from one ([LoadMCPFile]); "" for a
	// plugin.json. Raw is then that server's entry as the file holds it,
	// which is what trust pins of it.
	Server string
	Raw    json.RawMessage
	// Shadows holds the valid manifests of the same name in lower layers
	// that this one hides, highest layer first. [Discover] sets it; the
	// host shows them, so a repository taking the name of one of the
	// person's plugins is never silent.
	Shadows []*Manifest
}

// The protocols an entry may speak, as Entry.Protocol holds them.
const (
	ProtocolBingo = "bingo" // the plugin wire (schema/plugin.json); the default
	ProtocolMCP   = "mcp"   // a Model Context Protocol server on stdio (see package mcpbridge)
)

// Entry says how to run a plugin. Exactly one of Command, Wasm and URL is
// set.
type Entry struct {
	Command string            `json:"command,omitempty"` // exec transport: a bare name (PATH lookup) or an absolute path
	Wasm    string            `json:"wasm,omitempty"`    // wasm transport: absolute path to a .wasm
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is a remote MCP server's Streamable HTTP endpoint (http
	// transport, protocol "mcp" only); Headers are sent with each of its
	// requests.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth is how bingo registers with a remote server's authorization
	// server, when the person has registered it there beforehand; nil
	// lets bingo register itself (package internal/oauth).
	OAuth *OAuth `json:"oauth,omitempty"`
	// Protocol is what the entry speaks on its stdio: [ProtocolBingo] or
	// [ProtocolMCP]. Load sets it to ProtocolBingo when the manifest says
	// nothing, so it is never empty in a loaded manifest.
	Protocol string `json:"protocol,omitempty"`
}

// OAuth is a remote server's registration with its authorization server,
// as Claude Code's .mcp.json spells it: a client ID registered beforehand
// and its secret (a ${VAR}, read when the server starts), the loopback
// port its redirect URI was registered with, or the URL of a client ID
// metadata document for bingo. Grant GrantClientCredentials has bingo
// authorize as the client itself, with no person (its ID and secret
// required).
type OAuth struct {
	ClientID          string `json:"clientId,omitempty"`
	ClientSecret      string `json:"clientSecret,omitempty"`
	CallbackPort      int    `json:"callbackPort,omitempty"`
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	Grant             string `json:"grant,omitempty"`
}

// GrantClientCredentials is OAuth.Grant for unattended use: the OAuth
// client credentials grant.
const GrantClientCredentials = "client_credentials"

// Transport returns the transport the entry selects: [TransportExec] when
// Command is set, [TransportHTTP] when URL is, [TransportWasm] otherwise.
func (e Entry) Transport() string {
	switch {
	case e.Command != "":
		return TransportExec
	case e.URL != "":
		return TransportHTTP
	}
	return TransportWasm
}

// Load reads dir/plugin.json as a plugin of the named layer and validates it
// (the rules are in the package doc). A relative dir is made absolute
// against the process's working directory. Every error is a [Problem]
// naming the file and the reason; a missing plugin.json satisfies
// errors.Is(err, fs.ErrNotExist).
func Load(dir, layer string) (*Manifest, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, Problem{File: filepath.Join(dir, FileName), Err: err}
	}
	file := filepath.Join(root, FileName)
	data, err := readCapped(file)
	if err != nil {
		return nil, Problem{File: file, Err: err}
	}
	m, err := parse(data, root)
	if err != nil {
		return nil, Problem{File: file, Err: err}
	}
	m.File = file
	m.Layer = layer
	return m, nil
}

// readCapped reads a regular file of at most MaxSize bytes. Package
// capped refuses anything else before opening it, so a FIFO named
// plugin.json cannot block discovery.
func readCapped(file string) ([]byte, error) {
	data, err := capped.ReadAs(file, MaxSize, tooLarge(), nil)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("cannot read it: %w", pe.Err)
	}
	return data, err
}

func tooLarge() error {
	return fmt.Errorf("larger than the %d-byte (1 MiB) limit for a manifest", MaxSize)
}

var (
	topFields   = []string{"name", "version", "entry", "config", "permissions"}
	entryFields = []string{"command", "wasm", "url", "args", "env", "headers", "oauth", "protocol"}
)

// parse validates one manifest read from root (absolute) and expands it.
// Its errors are bare reasons; Load adds the file.
func parse(data []byte, root string) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, tooLarge()
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file; a manifest is a JSON object with name, version and entry")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	// Syntax first, over the whole input, so the message can say where.
	var whole json.RawMessage
	if err := json.Unmarshal(data, &whole); err != nil {
		return nil, syntaxErr(data, err)
	}
	top, _, err := object(whole, "the manifest", "", topFields)
	if err != nil {
		return nil, err
	}

	m := &Manifest{Root: root}

	// name
	if m.Name, err = requiredString(top, "name", ""); err != nil {
		return nil, err
	}
	if err := ValidName(m.Name); err != nil {
		return nil, err
	}
	if base := filepath.Base(root); base != m.Name {
		return nil, fmt.Errorf("name %q does not match the directory name %q; they must be spelled the same (rename the directory or the name)", m.Name, base)
	}

	// version
	if m.Version, err = requiredString(top, "version", ""); err != nil {
		return nil, err
	}
	if strings.TrimSpace(m.Version) == "" {
		return nil, errors.New(`"version" must not be blank`)
	}

	// entry
	rawEntry, ok := top["entry"]
	if !ok {
		return nil, errors.New(`missing "entry"; it says how to run the plugin: {"command": ...} or {"wasm": ...}`)
	}
	entry, _, err := object(rawEntry, `"entry"`, "entry.", entryFields)
	if err != nil {
		return nil, err
	}
	if m.Entry, err = parseEntry(entry, root); err != nil {
		return nil, err
	}

	// config
	if raw, ok := top["config"]; ok {
		if k := protocol.KindOf(raw); k != "an object" {
			return nil, fmt.Errorf(`"config" must be a JSON object (a JSON Schema for the plugin's settings), found %s`, k)
		}
		m.Config = append(json.RawMessage(nil), raw...)
	}

	// permissions
	if raw, ok := top["permissions"]; ok {
		if m.Permissions, err = parsePermissions(raw); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func parseEntry(entry map[string]json.RawMessage, root string) (Entry, error) {
	var e Entry
	var err error
	_, hasCmd := entry["command"]
	_, hasWasm := entry["wasm"]
	_, hasURL := entry["url"]
	switch {
	case hasURL:
		return parseRemote(entry)
	case hasCmd && hasWasm:
		return e, errors.New(`"entry" has both "command" and "wasm"; give exactly one ("command" runs a process, "wasm" runs a WASI module)`)
	case !hasCmd && !hasWasm:
		return e, errors.New(`"entry" needs one of "command" (runs a process), "wasm" (runs a WASI module) or "url" (a remote MCP server)`)
	}
	for _, k := range []string{"headers", "oauth"} {
		if _, ok := entry[k]; ok {
			return e, fmt.Errorf(`"entry.%s" is for a remote MCP server's "url" only`, k)
		}
	}
	expand := func(s string) string { return strings.ReplaceAll(s, RootVar, root) }

	if hasCmd {
		cmd, err := requiredString(entry, "command", "entry.")
		if err != nil {
			return e, err
		}
		if err := nonEmptyNoNUL(cmd, `"entry.command"`); err != nil {
			return e, err
		}
		cmd = expand(cmd)
		// A bare name stays a PATH lookup; a relative path with a slash
		// names a file beside the manifest.
		if strings.ContainsRune(cmd, '/') || strings.ContainsRune(cmd, filepath.Separator) {
			if !filepath.IsAbs(cmd) {
				cmd = filepath.Join(root, cmd)
			}
		}
		e.Command = cmd
	} else {
		wasm, err := requiredString(entry, "wasm", "entry.")
		if err != nil {
			return e, err
		}
		if err := nonEmptyNoNUL(wasm, `"entry.wasm"`); err != nil {
			return e, err
		}
		wasm = expand(wasm)
		if !filepath.IsAbs(wasm) {
			wasm = filepath.Join(root, wasm)
		}
		e.Wasm = wasm
	}

	if raw, ok := entry["args"]; ok {
		if k := protocol.KindOf(raw); k != "an array" {
			return e, fmt.Errorf(`"entry.args" must be an array of strings, found %s`, k)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return e, fmt.Errorf(`"entry.args": %w`, err)
		}
		e.Args = make([]string, 0, len(items))
		for i, it := range items {
			var s string
			if k := protocol.KindOf(it); k != "a string" {
				return e, fmt.Errorf(`"entry.args[%d]" must be a string, found %s`, i, k)
			}
			if err := json.Unmarshal(it, &s); err != nil {
				return e, fmt.Errorf(`"entry.args[%d]": %w`, i, err)
			}
			if strings.ContainsRune(s, 0) {
				return e, fmt.Errorf(`"entry.args[%d]" contains a NUL character`, i)
			}
			e.Args = append(e.Args, expand(s))
		}
		if e.Command != "" {
			for i, a := range e.Args {
				e.Args[i] = besideManifest(a, root)
			}
		}
	}

	if e.Protocol, err = entryProtocol(entry); err != nil {
		return e, err
	}
	if e.Env, err = stringMap(entry, "env", validVarName); err != nil {
		return e, err
	}
	for k, v := range e.Env {
		e.Env[k] = expand(v)
	}
	return e, nil
}

// entryProtocol is entry.protocol, [ProtocolBingo] if it is left out.
func entryProtocol(entry map[string]json.RawMessage) (string, error) {
	if _, ok := entry["protocol"]; !ok {
		return ProtocolBingo, nil
	}
	proto, err := requiredString(entry, "protocol", "entry.")
	if err != nil {
		return "", err
	}
	switch proto {
	case ProtocolBingo, ProtocolMCP:
		return proto, nil
	case "":
		return ProtocolBingo, nil // the same as leaving it out
	}
	return "", fmt.Errorf(`"entry.protocol" is %q; it must be "bingo" (the plugin wire, the default) or "mcp" (a Model Context Protocol server)`, proto)
}

// parseRemote reads an entry naming a remote MCP server: url, headers and
// protocol "mcp", nothing that runs.
func parseRemote(entry map[string]json.RawMessage) (Entry, error) {
	var e Entry
	for _, k := range []string{"command", "wasm", "args", "env"} {
		if _, ok := entry[k]; ok {
			return e, fmt.Errorf(`"entry" has both "url" and %q; a remote server's entry has "url", "headers", "oauth" and "protocol": "mcp"`, k)
		}
	}
	var err error
	if e.Protocol, err = entryProtocol(entry); err != nil {
		return e, err
	}
	if e.Protocol != ProtocolMCP {
		return e, errors.New(`"entry.url" names a remote MCP server, so "entry.protocol" must be "mcp"`)
	}
	if e.URL, err = requiredString(entry, "url", "entry."); err != nil {
		return e, err
	}
	if err := checkURL(e.URL); err != nil {
		return e, fmt.Errorf(`"entry.url": %w`, err)
	}
	if e.Headers, err = stringMap(entry, "headers", validHeaderName); err != nil {
		return e, err
	}
	if raw, ok := entry["oauth"]; ok {
		if e.OAuth, err = parseOAuth(raw); err != nil {
			return e, err
		}
	}
	return e, nil
}

// parseOAuth reads "entry.oauth": strings, each without a NUL; a client
// secret only with a client ID, and a metadata document's URL https.
func parseOAuth(raw json.RawMessage) (*OAuth, error) {
	fields, _, err := object(raw, `"entry.oauth"`, "entry.oauth.", []string{"clientId", "clientSecret", "callbackPort", "clientMetadataUrl", "grant"})
	if err != nil {
		return nil, err
	}
	o := &OAuth{}
	for k, dst := range map[string]*string{"clientId": &o.ClientID, "clientSecret": &o.ClientSecret, "clientMetadataUrl": &o.ClientMetadataURL, "grant": &o.Grant} {
		if _, ok := fields[k]; !ok {
			continue
		}
		if *dst, err = requiredString(fields, k, "entry.oauth."); err != nil {
			return nil, err
		}
		if err := nonEmptyNoNUL(*dst, `"entry.oauth.`+k+`"`); err != nil {
			return nil, err
		}
	}
	if raw, ok := fields["callbackPort"]; ok {
		if json.Unmarshal(raw, &o.CallbackPort) != nil || o.CallbackPort < 1 || o.CallbackPort > 65535 {
			return nil, fmt.Errorf(`"entry.oauth.callbackPort" is %s; it must be a port, 1 to 65535`, raw)
		}
	}
	switch o.Grant {
	case "", "authorization_code":
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			return nil, errors.New(`"entry.oauth.grant" "client_credentials" needs "clientId" and "clientSecret"`)
		}
	default:
		return nil, fmt.Errorf(`"entry.oauth.grant" is %q; it must be "authorization_code" (the default: you authorize in a browser) or "client_credentials" (unattended, with the client's own secret)`, o.Grant)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return nil, errors.New(`"entry.oauth.clientSecret" needs "clientId", the client it is the secret of`)
	}
	if u := o.ClientMetadataURL; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "${") {
		return nil, fmt.Errorf(`"entry.oauth.clientMetadataUrl" is %q; a client ID metadata document is at an https:// URL`, u)
	}
	return o, nil
}

// stringMap reads entry[field], if present, as an object of strings whose
// names pass valid; no value may hold a NUL.
func stringMap(entry map[string]json.RawMessage, field string, valid func(string) error) (map[string]string, error) {
	raw, ok := entry[field]
	if !ok {
		return nil, nil
	}
	what := `"entry.` + field + `"`
	vars, names, err := object(raw, what, "", nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vars))
	for _, name := range names { // in file order, so the first bad one is reported
		v := vars[name]
		if err := valid(name); err != nil {
			return nil, err
		}
		if k := protocol.KindOf(v); k != "a string" {
			return nil, fmt.Errorf(`"entry.%s.%s" must be a string, found %s`, field, name, k)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf(`"entry.%s.%s": %w`, field, name, err)
		}
		if strings.ContainsRune(s, 0) {
			return nil, fmt.Errorf(`"entry.%s.%s" contains a NUL character`, field, name)
		}
		out[name] = s
	}
	return out, nil
}

// besideManifest returns arg as an absolute path if it names an existing
// file, relative to root, that is not a directory, and does not start with
// "-" (a flag); otherwise arg unchanged. The process starts in the
// session's directory, where the relative name would find another file,
// or none (see the package doc).
func besideManifest(arg, root string) string {
	if arg == "" || filepath.IsAbs(arg) || strings.HasPrefix(arg, "-") {
		return arg
	}
	path := filepath.Join(root, arg)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		return arg
	}
	return path
}

// validVarName accepts what an environment can carry: a non-empty name
// without "=" (which would end the name early) or NUL.
func validVarName(name string) error {
	switch {
	case name == "":
		return errors.New(`"entry.env" has an empty variable name`)
	case strings.ContainsRune(name, '='):
		return fmt.Errorf(`"entry.env" variable name %q contains "="; a name cannot`, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf(`"entry.env" variable name %q contains a NUL character`, name)
	}
	return nil
}

func nonEmptyNoNUL(s, what string) error {
	if s == "" {
		return fmt.Errorf("%s must not be empty", what)
	}
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("%s contains a NUL character", what)
	}
	return nil
}

// requiredString returns obj[key] as a string; prefix is how the field is
// named in messages ("entry.").
func requiredString(obj map[string]json.RawMessage, key, prefix string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("missing %q", prefix+key)
	}
	if k := protocol.KindOf(raw); k != "a string" {
		return "", fmt.Errorf("%q must be a string, found %s", prefix+key, k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q: %w", prefix+key, err)
	}
	return s, nil
}

// object decodes raw (already known to be valid JSON) as one JSON object.
// Unlike encoding/json into a struct, keys match exactly (not
// case-insensitively), a repeated key is refused, and with known non-nil any
// other key is refused by name. It returns the keys in file order too. what names the object in messages; prefix
// names its fields.
func object(raw json.RawMessage, what, prefix string, known []string) (map[string]json.RawMessage, []string, error) {
	if k := protocol.KindOf(raw); k != "an object" {
		return nil, nil, fmt.Errorf("%s must be a JSON object, found %s", what, k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	var keys []string
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		key, _ := tok.(string) // an object key is always a string
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		if known != nil && !slices.Contains(known, key) {
			return nil, nil, fmt.Errorf("unknown field %q in %s (known fields: %s)", prefix+key, what, strings.Join(known, ", "))
		}
		if _, dup := out[key]; dup {
			return nil, nil, fmt.Errorf("field %q appears more than once in %s", prefix+key, what)
		}
		out[key] = v
		keys = append(keys, key)
	}
	return out, keys, nil
}

// syntaxErr says where in the file the JSON went wrong, as line:column.
func syntaxErr(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		off := min(max(int(se.Offset)-1, 0), len(data))
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		col := off - bytes.LastIndexByte(data[:off], '\n')
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	return fmt.Errorf("invalid JSON: %w", err)
}
