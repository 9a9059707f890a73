// Package settings owns the person's settings: reading the two layers of
// settings.json, refusing what is malformed, and merging what is left into
// one Settings value. docs/settings.md is the person's reference.
//
// The layers are ~/.bingo/settings.json (the user's) and
// <project>/.bingo/settings.json (the repository's), read in that order;
// Files returns the two paths.
//
// Every key is in one table (KeySpecs, keys.go): its kind, unit, default,
// the files it is taken from and what it does. The parser walks a file by
// it, LoadLayered reads its trust rules from it, schema/settings.json is
// generated from it and docs/settings.md is held to it by a test. A new
// key is a new row.
//
// # Merging
//
// A later file wins, key by key, except:
//
//   - permissions.allow, .deny, .ask and env.withhold are unioned, in
//     order, without repeats: a project can add a rule, never remove one.
//   - plugins.<name>, sandbox.<name>, mcp.<name> and env.plugins.<name>
//     are replaced whole, per name: a config or a grant is one decision,
//     and merging insides would make a value neither file wrote.
//   - provider.plugin chooses that provider and drops an earlier choice;
//     provider.openai chooses OpenAI, its keys overriding an earlier
//     openai choice's one by one.
//
// # Trust
//
// A repository's settings file is not written by the person running bingo.
// LoadLayered applies it only as far as the person trusts the project, and
// reports every key it leaves out:
//
//   - sandbox, mcp and env come only from the user's file (Loaded.UserOnly).
//   - An untrusted project's file applies only permissions.deny and .ask,
//     which can only refuse or ask, and plugins.<name> for its own plugins
//     (Project.Own); every other key is ignored (Loaded.Ignored), shorter
//     or longer: a deadline cut to a nanosecond would make the person's own
//     guard hook miss it.
//   - An untrusted project plugin (Project.Untrusted) never gets what the
//     user's file gives a plugin of its name (Loaded.Withheld), except an
//     env withhold list, which only narrows.
//
// # Refusals
//
// Mistakes are refused, not guessed at: an unknown key, a key given twice,
// a value of the wrong kind. A malformed file is one *Error naming the
// file, line and column; none of that file applies, the others still do.
// A missing or empty file is not an error. A file is at most MaxFileSize
// and must be a regular file (a FIFO would block bingo); it is never read
// whole before those checks (package capped). A bad permission pattern
// (Project.ValidPattern; package gate owns the grammar) is one *Error and
// is dropped alone; past a few, one *Error counts the rest. Plugin names are not checked against the installed
// plugins: settings are read before plugins load.
package settings
