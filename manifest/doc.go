// Package manifest owns plugin.json: reading and validating one manifest,
// expanding ${PLUGIN_ROOT}, the layers plugins are installed in, discovering
// the plugins of every layer, the environment an exec plugin runs with, and
// the least time its start may need (Entry.StartAllowance: a package runner
// may install it first). It starts nothing and speaks no wire; the bridge
// builds on what it returns.
//
// # The manifest
//
//	{
//	  "name": "wordcount",
//	  "version": "0.1.0",
//	  "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]},
//	  "config": {"type": "object"}
//	}
//
// The rules, each refused with a message naming the file and the reason:
//
//   - The file is UTF-8, at most [MaxSize] bytes, one JSON object; a field
//     appears once and is spelled exactly (case-sensitive).
//   - Unknown fields are refused, at the top level and inside entry, and the
//     message names the field.
//   - name is required, passes [ValidName], and equals the name of the
//     directory the manifest sits in.
//   - version is a required, non-blank string (no particular scheme).
//   - entry is required and holds exactly one of command (exec) or wasm (a
//     WASI preview1 module), plus optional args, env (names non-empty,
//     without "=" or NUL) and protocol: "bingo" (the default) or "mcp" (an
//     MCP server, translated by package mcpbridge). An "mcp" entry may give
//     url and headers instead: a remote server over Streamable HTTP.
//   - config, if present, is a JSON object: a JSON Schema documenting the
//     person's plugins.<name> settings; it validates nothing.
//
// # ${PLUGIN_ROOT}
//
// ${PLUGIN_ROOT} in entry.command, entry.wasm, an argument or an env value
// is the manifest's absolute directory; nothing else is expanded, so a
// manifest means the same on every machine.
//
// A relative entry.wasm, a relative entry.command with a slash, and an exec
// argument naming an existing file of the plugin's are made absolute at
// load (docs/design.md, "manifest", says why and exactly when).
//
// # Layers and discovery
//
// One directory per plugin inside a layer directory, in increasing
// precedence: ~/.bingo/plugins, <project>/.bingo/plugins (the nearest
// ancestor holding .bingo or .git), then each --plugin-dir. The highest layer that holds a valid manifest of a
// name wins that name; a --plugin-dir holding a plugin.json is a layer of
// that one plugin.
//
// [Discover] reads each layer's sub-directories; a broken manifest is one
// [Problem] and the rest load (docs/design.md, "manifest").
//
// # MCP configuration files
//
// The project layer also holds the servers of the project's .mcp.json
// ([LoadMCPFile], [ParseMCPConfig]), each a manifest with protocol "mcp"
// named by [PluginName]; their ${VAR}s are read in only when a trusted
// server starts ([Manifest.Resolve]; docs/design.md, "manifest").
package manifest
