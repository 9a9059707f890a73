// Package trust decides who may start what a cloned repository ships. It
// snapshots what a project's plugins would run, keeps the person's trust
// decisions, and says, plugin by plugin, what changed since.
//
// # The rules
//
// A repository is untrusted until the person trusts it: its plugins do not
// start with the person's authority and its settings do not apply in full
// until then. Trust is recorded in the person's own file,
// ~/.bingo/trust.json ([Store]), never in the repository, which could
// otherwise trust itself. A decision is keyed by the project's real path
// ([RealRoot]: absolute, every symlink resolved), so two spellings of one
// directory are one project, and by digests of what would run, so trust
// is of the files as they were when the person said yes. A "no" at the
// prompt is recorded too (Project.Declined), so bingo asks once.
//
// Trust lapses plugin by plugin: when what one plugin would run changes,
// that plugin is untrusted again and [Project.Check] names the files that
// changed; the project's other plugins keep their trust. The project's
// settings file is pinned the same way ([SettingsRecord],
// [Project.SettingsTrusted]).
//
// A trust file that cannot be understood trusts nothing: [Store.Get]
// returns an error wrapping [ErrCorrupt], which the host shows as a notice
// and treats as "untrusted"; it never crashes and never guesses.
// [Store.Update] keeps the damaged file as trust.json.corrupt and starts
// afresh. A file written by a newer bingo (a [VersionError]) is also
// untrusted, but Update refuses to overwrite it.
//
// # The digest rule
//
// For one plugin m (a *manifest.Manifest, its entry already expanded) of
// the project at root P, the candidate paths are:
//
//   - the manifest file itself (m.File);
//   - entry.wasm;
//   - entry.command, if it contains a path separator;
//   - every entry.args element, and every entry.env value, that looks like
//     a path: absolute, or containing a "/";
//   - for an argument containing "=" (as in --flag=/path), the part after
//     the first "=", if it looks like a path.
//
// A relative candidate is joined to the plugin's directory (m.Root). A
// candidate counts only if, lexically cleaned, it lies inside P: those are
// the files the repository controls. P may be spelled as given, with its
// symlinks resolved, or as the ancestor of the plugin's directory that is
// P; a path inside any spelling has the same relative path. Others, such as /usr/bin/python3, are left out; the manifest's
// own bytes already pin their names.
//
// Each counted candidate is recorded under its path relative to P
// (slash-separated) as exactly one of:
//
//   - "file <hex sha256 of the contents>" for a regular file (by Lstat);
//   - "symlink <target as Readlink returns it>" for a symlink; and if the
//     link resolves to a regular file inside P, that file is also recorded,
//     as "file <hex>", under its own relative path;
//   - "missing" if there is nothing there (nor can be: a name too long, a
//     non-directory or a symlink loop on the way);
//   - "other <type>" for anything else (directory, fifo, socket,
//     char-device, device, irregular). Such a file is never opened: a FIFO
//     would hang the host.
//
// Regular files are hashed as a stream, never read whole, and one over
// [MaxFileSize] (512 MiB) is an error wrapping [ErrTooLarge] that names it.
// A file that cannot be examined (permission denied) is an error too;
// a plugin that cannot be snapshotted stays untrusted.
//
// The plugin's digest is "sha256:" and the hex sha256 of a canonical
// encoding: each string is written as its length (8 bytes, big-endian)
// followed by its bytes, and the fields are "bingo-trust-v1", the plugin's
// name, the number of recorded files (8 bytes, big-endian), then each
// relative path and its record, in byte order of the paths. [Plugin.Files]
// keeps the records themselves so a lapse can name what changed.
//
// [Sums] remembers each file version's sum (its identity, size and
// timestamps), so one process that digests a plugin twice, for trust and
// for the host's declaration cache, reads each file once. Trust digests
// only what the process itself read: sums kept from an earlier process are
// believed only by a view made with [Sums.Assuming], which the declaration
// cache uses and trust does not.
//
// The settings record is the same record for one file, except that the
// host reads settings through a symlink wherever it points, so a symlink's
// record also pins what it resolves to: "symlink <target> -> file <hex>".
//
// # The limit of the rule
//
// Trust is of the entry as named. A file the manifest does not name is not
// covered: modules a script imports, libraries a binary loads, data it
// reads, a path hidden in a colon-separated list or in the middle of an
// argument, and the contents behind a symlink that leads out of the
// project. Changing such a file does not lapse trust. Neither do changes
// outside the project to programs the entry names by absolute path or
// PATH lookup (/usr/bin/python3, python3): the person's machine, not the
// repository, controls those.
package trust
