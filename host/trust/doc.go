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
// untrusted, but Update refuses to overwrite it; one written by an older
// bingo, whose pins covered less (an [OldVersionError]), trusts nothing
// and is kept as trust.json.v1.
//
// # The digest rule
//
// A plugin of the project at P is pinned against the repository R around
// it ([RepositoryRoot]: the nearest ancestor of P, P included, holding
// .git; else P), which can change any file in it, and against the
// directory D its process starts in (the session's) and the PATH it gets
// ([Scope]). What is recorded, every path spelled with its directories'
// symlinks resolved:
//
//   - the plugin's directory, whole: every entry, recursively; or, for a
//     server of the project's .mcp.json, which has no directory, that
//     server's entry in the file (key "<file>#<server>", record "entry
//     <hex sha256 of the entry, compacted with its keys sorted>"), so
//     another server's entry changing leaves it trusted;
//   - the files its entry names, as the process resolves them: entry.wasm;
//     the file entry.command runs (package lookpath: a bare name searched
//     in entry.env's PATH, else the PATH the process inherits); every
//     argument, and the part of one after its first "=" (--config=x); and
//     every entry.env value that looks like a path (absolute, or with a
//     separator). A relative one is taken against D. The manifest loader
//     has already made absolute an argument that names a file of the
//     plugin (see package manifest), so the process runs that file
//     wherever it starts.
//
// A named path with nothing there is not recorded: should a file appear,
// its new record lapses the trust. A named file inside R, or inside the
// plugin's directory, is recorded; one outside both is not the
// repository's to change, and is listed in [Plugin.Outside] instead
// (/usr/bin/python3), never in the digest.
//
// Each recorded entry is kept under its path relative to P
// (slash-separated; "../lib/x.py" for a file of R above a nested P) as
// exactly one of:
//
//   - "file <hex sha256 of the contents>" for a regular file (by Lstat);
//   - "symlink <target as Readlink returns it>" for a symlink; what it
//     resolves to is pinned as well if it is ours (a directory walked
//     whole), or listed as outside;
//   - "other <type>" for anything else (directory, fifo, socket,
//     char-device, device, irregular): a directory the entry names (its
//     contents are pinned only if it is the plugin's), and never-opened
//     specials, since a FIFO would hang the host.
//
// Regular files are hashed as a stream, never read whole. One plugin pins
// at most [MaxPluginFiles] entries (files, directories and links alike)
// and [MaxPluginBytes] bytes; past either, Snapshot is an error wrapping
// [ErrTooLarge] that names the cap and where it was passed, and the plugin
// cannot be trusted. A file that cannot be examined (permission denied) is
// an error too; a plugin that cannot be snapshotted stays untrusted.
//
// The plugin's digest is "sha256:" and the hex sha256 of a canonical
// encoding: each string is written as its length (8 bytes, big-endian)
// followed by its bytes, and the fields are "bingo-trust-v2", the plugin's
// name, the number of recorded files (8 bytes, big-endian), then each
// relative path and its record, in byte order of the paths. [Plugin.Files]
// keeps the records themselves so a lapse can name what changed. Records
// of the first rule (trust.json version 1, which pinned only the named
// files) are not read: [OldVersionError].
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
// Trust is of the plugin's directory and the files its entry names. What a
// program reads that is neither is not covered: a module an interpreter
// imports from outside the plugin's directory (site-packages,
// node_modules above it, the session's directory on sys.path), libraries
// a binary loads, data it reads, the contents of a directory the entry
// names, and a path hidden in a colon-separated list or in the middle of
// an argument. Changing such a file does not lapse trust. Neither do
// changes to files outside the repository that the entry names
// (/usr/bin/python3): the person's machine, not the repository, controls
// those, and `bingo trust` lists them.
package trust
