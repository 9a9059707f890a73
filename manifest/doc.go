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
//   - The file is UTF-8, at most [MaxSize] bytes, and holds exactly one JSON
//     object. A field name appears once and is spelled exactly (JSON field
//     names are case-sensitive here, unlike encoding/json's default).
//   - Unknown fields are refused, at the top level and inside entry, and the
//     message names the field: a typo such as "entyr" must not silently give
//     a plugin that runs nothing.
//   - name is required, passes [ValidName], and equals the name of the
//     directory the manifest sits in. The path is what one layer overrides
//     another by, so two spellings would be two answers to "which plugin is
//     this".
//   - version is a required, non-blank string (no particular scheme).
//   - entry is required and holds exactly one of command (exec transport) or
//     wasm (a WASI preview1 module run in wazero), plus optional args (an
//     array of strings) and env (an object of string values whose names are
//     non-empty and contain neither "=" nor NUL), and an optional protocol:
//     "bingo" (the default; "" means the same) or "mcp", for a Model Context
//     Protocol server on stdio, run by either transport and translated by
//     package mcpbridge. Any other value is refused. Instead of command or
//     wasm, an "mcp" entry may give url (http or https) and headers (an
//     object of strings): a remote MCP server over Streamable HTTP.
//   - config, if present, is a JSON object: a JSON Schema for the person's
//     plugins.<name> settings slice. It is documentation only and is never
//     used to validate anything.
//
// # ${PLUGIN_ROOT}
//
// ${PLUGIN_ROOT} expands, everywhere it appears, in entry.command,
// entry.wasm, every argument and every env value, to the absolute directory
// the manifest was read from. Nothing else is expanded: ${HOME}, $PLUGIN_ROOT
// (without braces) and any other ${...} are passed on exactly as written, so
// a manifest means the same thing on every machine. Env names and config are
// never expanded.
//
// After expansion a relative entry.wasm is resolved against the plugin
// directory. An entry.command without a slash ("python3") stays a PATH
// lookup; a relative one with a slash ("./run", "bin/run") is resolved
// against the plugin directory. Whether the file exists is the transport's
// question, asked when the plugin starts.
//
// An exec plugin's process starts in the session's directory, not the
// plugin's, so a relative argument would name a file there. An argument
// of an exec entry that names an existing file (not a directory) relative
// to the plugin directory, and does not start with "-", is therefore
// made absolute at load ("main.py", "tools/lint.py" become
// <plugin>/main.py, <plugin>/tools/lint.py): the process runs the very
// file trust pinned, wherever bingo starts. Any other argument is passed
// as written. A wasm entry's arguments are the guest's and never change.
//
// # Layers and discovery
//
// Plugins live one directory per plugin inside a layer directory. In
// increasing precedence: the user layer (~/.bingo/plugins), the project
// layer (<project>/.bingo/plugins, where the project is the nearest ancestor
// of the working directory holding .bingo or .git), then every --plugin-dir,
// later ones winning. The highest layer that holds a valid manifest of a
// name wins that name. A --plugin-dir that holds a plugin.json itself is
// that one plugin's directory (the plugin being written), a layer of one;
// its name must still be its directory's name.
//
// [Discover] reads every immediate sub-directory of each layer (a symlink to
// a directory is followed; the link's own name is the plugin's name and its
// path is ${PLUGIN_ROOT}). Plain files in a layer directory are ignored, a
// missing layer directory is not a problem, and a sub-directory without a
// plugin.json is skipped silently (it may be anything: a checkout, a
// cache). Every broken manifest, whichever layer it is in, becomes one
// [Problem]; the others still load, and a broken manifest in a higher layer
// does not hide a valid one of the same name in a lower layer: the lower
// one is used and the broken one is reported.
//
// # MCP configuration files
//
// The project layer also holds the servers of the project's .mcp.json
// ([LoadMCPFile], [ParseMCPConfig]): each a manifest with protocol "mcp",
// named by [PluginName], whose Server and Raw say which entry of the file
// it is. Nothing in such an entry is expanded at load: ${VAR} and
// ${VAR:-default} are read in ([Manifest.Resolve]) only when the host
// starts a server the person trusts, or pins one to be trusted, and only
// from what of the person's environment that server is given. A plugin
// directory of the same layer keeps its name over a server's.
package manifest
