// Package declcache keeps what each plugin declared at its last handshake,
// so that the host can offer a plugin's contributions without starting it
// and start it only when one of them is used.
//
// A declaration is cached under a key that digests everything it may
// depend on: the plugin's files, by package trust's digest rule (its
// whole directory, and the files its entry names: entry.wasm, the program
// entry.command runs, the arguments and entry.env values that are paths),
// taken over the whole file system rather than one repository; the
// protocol version; and
// what the plugin is started with: its transport, directory and data
// directory, its configuration (plugins.<name>), the environment it is
// given (an exec plugin's, filtered as the host filters it; a wasm
// module's entry.env), what else it is granted (Fields: every field of a
// module's configuration but those the host names), and the directory its declaration
// may depend on (Start.Dir). That is the project's (the repository's root,
// or the home directory outside one), not the working directory: a plugin
// is told the working directory with each call, never at its handshake,
// so a second subdirectory of a repository starts nothing whose
// declaration is cached. An MCP server is the exception: it is offered
// the working directory as its root, and may declare by it, so its
// declaration is keyed by that directory. A shell's own bookkeeping
// variables (_, OLDPWD, SHLVL) are left out: they change between two
// commands and mean nothing to a plugin; so is PWD, which Start.Dir
// stands for. What the key cannot see (a module a script imports from
// elsewhere, a file the plugin reads outside its directory, a plugin that
// declares by the directory it was started in) is caught when the plugin
// next starts: a handshake that declares otherwise replaces the cached
// declaration, with a notice (package bridge).
//
// A handshake refused for what the plugin said it is (another name or
// protocol: bridge.IdentityError) is cached the same way (StoreFailure),
// so that a plugin whose files make it fail is not started again, each
// run, to fail again.
//
// One file a plugin, <dir>/<name>.json, holds its latest few entries,
// capped at 4 MiB, written whole and renamed into place; a file that
// cannot be read or understood is a miss and a log line, never a failure
// (docs/design.md, "host/declcache": the format, and why a hit is not
// checked again).
//
// A plugin's file goes when the plugin does (Prune, at each host Open):
// a name the run did not find whose every entry names a file that no
// longer exists is a plugin uninstalled or renamed, not another project's,
// and its file is removed. Entries that name no file keep theirs, since
// nothing says where their plugin was.
//
// Keys are cheap to check: the sum of each file is kept beside the entry
// with the file's version (trust.FileSum), and a file whose version has
// not changed is not read again.
package declcache
