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

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// MCPFileName is the MCP configuration file a project holds at its root
// (Claude Code's format), read as plugins of the project layer.
const MCPFileName = ".mcp.json"

// MCPServer is one server of an MCP configuration file, in file order.
type MCPServer struct {
	Key   string          // the server's name as the file spells it
	Name  string          // the plugin name it maps to ([PluginName]); "" if it maps to none
	Entry Entry           // protocol "mcp"; nothing expanded
	Raw   json.RawMessage // the server's entry as the file holds it
	Err   error           // why the server cannot be a plugin, if it cannot
}

// ParseMCPConfig reads an MCP configuration file's servers: the objects
// under "mcpServers" (Claude Code's .mcp.json, Claude Desktop's
// claude_desktop_config.json, Cursor's .cursor/mcp.json) or "servers" (VS
// Code's .vscode/mcp.json). Other top-level fields are ignored, as they
// are in a server's entry, whose fields are:
//
//   - "command", "args", "env": a server on stdio;
//   - "url", "headers": a remote server over Streamable HTTP;
//   - "type": "stdio", or "http" (also "streamable-http") for a remote
//     one; "sse", the transport MCP deprecated, is refused.
//
// A relative command with a slash is taken against dir, the file's
// directory. A server that is not usable has Err set and the others are
// still returned; an error is the file's own.
func ParseMCPConfig(data []byte, dir string) ([]MCPServer, error) {
	if len(data) > MaxSize {
		return nil, tooLarge()
	}
	var whole json.RawMessage
	if err := json.Unmarshal(data, &whole); err != nil {
		return nil, syntaxErr(data, err)
	}
	top, _, err := object(whole, "the file", "", nil)
	if err != nil {
		return nil, err
	}
	key := "mcpServers"
	raw, ok := top[key]
	if !ok {
		key = "servers"
		if raw, ok = top[key]; !ok {
			return nil, errors.New(`it has no "mcpServers" (nor VS Code's "servers") object`)
		}
	}
	entries, names, err := object(raw, fmt.Sprintf("%q", key), "", nil)
	if err != nil {
		return nil, err
	}
	var out []MCPServer
	taken := map[string]string{}
	for _, k := range names {
		s := MCPServer{Key: k, Raw: compact(entries[k])}
		s.Name, s.Err = PluginName(k)
		if s.Err == nil {
			if other, dup := taken[s.Name]; dup {
				s.Err = fmt.Errorf("its plugin name %s is already server %q's", s.Name, other)
			} else {
				taken[s.Name] = k
			}
		}
		if s.Err == nil {
			s.Entry, s.Err = parseServer(entries[k], dir)
		}
		if s.Err != nil {
			s.Err = fmt.Errorf("server %q: %w", k, s.Err)
		}
		out = append(out, s)
	}
	return out, nil
}

// compact is raw without insignificant white space, its keys sorted: a
// server's entry is pinned by what it says, not by how it is laid out.
func compact(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// parseServer reads one server's entry.
func parseServer(raw json.RawMessage, dir string) (Entry, error) {
	fields, _, err := object(raw, "its entry", "", nil)
	if err != nil {
		return Entry{}, err
	}
	kind := ""
	if _, ok := fields["type"]; ok {
		if kind, err = requiredString(fields, "type", ""); err != nil {
			return Entry{}, err
		}
	}
	_, hasURL := fields["url"]
	switch kind {
	case "", "stdio", "http", "streamable-http", "streamableHttp":
	case "sse":
		return Entry{}, errors.New(`"type" is "sse", the HTTP+SSE transport MCP has deprecated; bingo speaks Streamable HTTP ("type": "http")`)
	default:
		return Entry{}, fmt.Errorf(`"type" is %q; bingo knows "stdio" and "http"`, kind)
	}
	// Only the fields bingo reads are handed on: other tools keep their
	// own settings beside them.
	entry := map[string]json.RawMessage{"protocol": json.RawMessage(`"mcp"`)}
	if hasURL || kind == "http" || kind == "streamable-http" || kind == "streamableHttp" {
		for _, k := range []string{"url", "headers", "oauth"} {
			if v, ok := fields[k]; ok {
				entry[k] = v
			}
		}
		if _, ok := entry["url"]; !ok {
			return Entry{}, errors.New(`a remote server needs "url"`)
		}
		return parseRemote(entry)
	}
	for _, k := range []string{"command", "args", "env"} {
		if v, ok := fields[k]; ok {
			entry[k] = v
		}
	}
	if _, ok := entry["command"]; !ok {
		return Entry{}, errors.New(`it has neither "command" (a server on stdio) nor "url" (a remote server)`)
	}
	e := Entry{Protocol: ProtocolMCP}
	if e.Command, err = requiredString(entry, "command", ""); err != nil {
		return e, err
	}
	if err := nonEmptyNoNUL(e.Command, `"command"`); err != nil {
		return e, err
	}
	if strings.ContainsRune(e.Command, '/') && !filepath.IsAbs(e.Command) && !strings.HasPrefix(e.Command, "${") {
		e.Command = filepath.Join(dir, e.Command)
	}
	if rawArgs, ok := entry["args"]; ok {
		var items []json.RawMessage
		if k := protocol.KindOf(rawArgs); k != "an array" {
			return e, fmt.Errorf(`"args" must be an array of strings, found %s`, k)
		}
		_ = json.Unmarshal(rawArgs, &items)
		for i, it := range items {
			var s string
			if k := protocol.KindOf(it); k != "a string" {
				return e, fmt.Errorf(`"args[%d]" must be a string, found %s`, i, k)
			}
			_ = json.Unmarshal(it, &s)
			if strings.ContainsRune(s, 0) {
				return e, fmt.Errorf(`"args[%d]" contains a NUL character`, i)
			}
			e.Args = append(e.Args, s)
		}
	}
	if e.Env, err = stringMap(entry, "env", validVarName); err != nil {
		return e, err
	}
	return e, nil
}

// PluginName maps an MCP server's name to the plugin it becomes, by one
// rule: lower-cased, each run of characters other than a-z and 0-9
// becomes one "-", and a "-" left at either end is dropped ("GitHub" is
// github, "my_server.v2" is my-server-v2). A name that maps to nothing,
// or to more than [MaxNameLen] characters, is refused with the reason.
func PluginName(server string) (string, error) {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(server) {
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			continue
		}
		dash = true
	}
	name := b.String()
	if err := ValidName(name); err != nil {
		return "", fmt.Errorf("its name does not map to a plugin name (lower-cased, each run of other characters than a-z and 0-9 one \"-\"): %w", err)
	}
	return name, nil
}

// LoadMCPFile reads an MCP configuration file (a project's .mcp.json) as
// plugins of the named layer, in file order: each server a manifest with
// protocol "mcp", its version "mcp.json", its Root the file's directory,
// its Server the name the file gives it and its Raw that server's entry.
// A missing file is no plugins and no problem; each of the first
// ShownMCPProblems servers that cannot be a plugin is one Problem, and
// one more Problem counts the rest: a file of thousands of broken
// servers is a few lines to read on every run, not thousands.
func LoadMCPFile(file, layer string) ([]*Manifest, []Problem) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, []Problem{{File: file, Err: err}}
	}
	data, err := readCapped(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []Problem{{File: abs, Err: err}}
	}
	servers, err := ParseMCPConfig(data, filepath.Dir(abs))
	if err != nil {
		return nil, []Problem{{File: abs, Err: err}}
	}
	var found []*Manifest
	var problems []Problem
	more, first := 0, ""
	for _, s := range servers {
		switch {
		case s.Err != nil && len(problems) < ShownMCPProblems:
			problems = append(problems, Problem{File: abs, Err: s.Err})
			continue
		case s.Err != nil:
			if more == 0 {
				first = s.Key
			}
			more++
			continue
		}
		found = append(found, &Manifest{Name: s.Name, Version: "mcp.json", Entry: s.Entry,
			Root: filepath.Dir(abs), File: abs, Layer: layer, Server: s.Key, Raw: s.Raw})
	}
	if more > 0 {
		problems = append(problems, Problem{File: abs, Err: fmt.Errorf("%d more servers, from %q on, cannot be plugins either", more, first)})
	}
	return found, problems
}

// ShownMCPProblems is how many of an MCP configuration file's servers that
// cannot be plugins are named one by one.
const ShownMCPProblems = 5

// SetMCPServer writes server key's entry into the MCP configuration file
// (its "mcpServers" object), or with a nil entry removes it, and reports
// whether the file held that server before. The file's other fields and
// servers are kept, in their order; a missing file is created (mode 0644)
// holding just this server.
//
// The file is replaced (a new file renamed over it, keeping its mode),
// never written in place, and a symbolic link there is refused: writing
// through it would change the file it points to, which may be another
// tool's configuration, and a link to it by another name (a hard link)
// keeps what it held.
func SetMCPServer(file, key string, entry json.RawMessage) (had bool, err error) {
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(file); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(file)
			return false, fmt.Errorf("%s is a symbolic link (to %s): bingo does not write through it, which would change the file it points to; edit that file yourself, or replace the link with a file of its own", file, target)
		}
		mode = fi.Mode().Perm()
	}
	top := orderedObject{vals: map[string]json.RawMessage{}}
	data, err := readCapped(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	default:
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			return false, syntaxErr(data, err)
		}
		if top.vals, top.keys, err = object(data, "the file", "", nil); err != nil {
			return false, err
		}
	}
	servers := orderedObject{vals: map[string]json.RawMessage{}}
	if raw, ok := top.vals["mcpServers"]; ok {
		if servers.vals, servers.keys, err = object(raw, `"mcpServers"`, "", nil); err != nil {
			return false, err
		}
	}
	_, had = servers.vals[key]
	servers.set(key, entry)
	raw, err := servers.MarshalJSON()
	if err != nil {
		return had, err
	}
	top.set("mcpServers", raw)
	out, err := top.MarshalJSON()
	if err != nil {
		return had, err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out, "", "  "); err != nil {
		return had, err
	}
	indented.WriteByte('\n')
	return had, diskrecord.Replace(file, indented.Bytes(), diskrecord.Options{Temp: filepath.Base(file) + ".*.tmp", Mode: mode})
}

// orderedObject is a JSON object that keeps its keys' order.
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

// set puts v at key (a new key last), or with nil v removes key.
func (o *orderedObject) set(key string, v json.RawMessage) {
	_, had := o.vals[key]
	switch {
	case v == nil && had:
		delete(o.vals, key)
		o.keys = slices.DeleteFunc(o.keys, func(k string) bool { return k == key })
	case v != nil:
		if !had {
			o.keys = append(o.keys, key)
		}
		o.vals[key] = v
	}
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
