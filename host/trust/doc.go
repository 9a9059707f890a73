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
// it ([RepositoryRoot]: the outermost ancestor holding .git; else P) and the
// directory its process starts in and the environment it gets ([Scope]).
// The digest covers the plugin's directory, whole (or, for a server of the
// project's .mcp.json, that server's entry in the file), and every file its
// entry names, resolved as the process resolves it (its ${VAR}s expanded
// as the host expands them, then package lookpath): a
// named file inside R or the plugin's directory is pinned, one outside
// both is listed in [Plugin.Outside] and not pinned. Files are hashed as a
// stream, specials never opened, symlinks recorded by target; one plugin
// pins at most [MaxPluginFiles] entries and [MaxPluginBytes] bytes
// ([ErrTooLarge]). [Plugin.Files] keeps each record so a lapse can name
// what changed. docs/design.md ("The trust digest") states the records
// and the encoding exactly.
//
// [Sums] remembers each file version's sum so one process reads each file
// once; trust believes only sums this process read (the declaration cache
// may use kept ones, through [Sums.Assuming]).
//
// # The limit of the rule
//
// Trust covers the plugin's directory and the files its entry names, and
// nothing else a program reads: docs/design.md ("host/trust") lists what
// that leaves out, and why.
package trust
