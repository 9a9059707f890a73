// Package settings owns the person's settings: reading the two layers of
// settings.json, refusing what is malformed, and merging what is left into
// one Settings value.
//
// The layers are ~/.bingo/settings.json (the user's, every project) and
// <project>/.bingo/settings.json (this repository's), read in that order;
// Files returns the two paths. A file has this shape, and every key is
// optional:
//
//	{
//	  "permissions": {"allow": ["plugin__wordcount__count"], "deny": ["plugin__evil__*"], "ask": []},
//	  "plugins":     {"wordcount": {"any": "json"}},
//	  "deadlines":   {"tool": "60s", "hook": "150ms", "providerTotal": "10m"},
//	  "limits":      {"providerResponseMiB": 32},
//	  "sandbox":     {"wordcount-wasm": {"writable": false, "memoryMiB": 256}},
//	  "provider":    {"plugin": "myplugin/fast"},
//	  "turn":        {"maxSteps": 20, "compactAt": 200000},
//	  "env":         {"withhold": ["AWS_SECRET_ACCESS_KEY"],
//	                  "plugins": {"deploy": {"withhold": ["GITHUB_TOKEN"], "pass": ["OPENAI_API_KEY"]}}}
//	}
//
// Every key is in one table (KeySpecs, keys.go): its kind, unit, default,
// the files it is taken from and what it does. The parser walks a file by
// it, key by key and kind by kind, LoadLayered reads its trust rules from
// it, and schema/settings.json is generated from it; docs/settings.md, the
// person's reference, is held to it by a test.
//
// deadlines bound every crossing to a plugin, by kind (Deadlines lists them
// and DefaultDeadlines gives their defaults). deadlines.providerTotal (10m)
// bounds a plugin provider's whole response, however lively its deltas:
// past it the stream is cancelled and the turn fails. limits bound what
// one crossing may make the host hold: limits.providerResponseMiB (32)
// caps one response of a plugin's provider, its deltas as they cross the
// wire; past it the stream is cancelled the same way.
//
// provider is either {"plugin": "<plugin>/<providerId>"}, optionally with
// "model": "<one of the provider's declared models>", or
// {"openai": {"baseURL": "...", "model": "...", "apiKeyEnv": "OPENAI_API_KEY"}},
// never both in one file. provider.model reaches the plugin's
// provider/stream as request.model (without it, model is absent and the
// provider picks); a model the provider does not declare fails the turn
// with an error naming the models it does.
//
// env names the host's environment variables an exec plugin does not
// see: env.withhold are kept from every plugin, env.plugins.<name>.withhold
// from that plugin as well, and env.plugins.<name>.pass are given to that
// plugin even so; Env.Filter applies them. Every entry must be a variable's
// name, never its value.
//
// # Merging
//
// Load reads any number of files and trusts each alike. A later file wins,
// with one deliberate exception:
//
//   - permissions.allow, .deny and .ask are unioned across the layers, in
//     order and without repeats. A project can add rules but cannot remove
//     one: a repository you cloned must not be able to lift your deny.
//     env.withhold is unioned the same way.
//   - plugins.<name>, sandbox.<name> and env.plugins.<name> are replaced
//     whole, per name, by the later layer. A plugin's config slice is one
//     document the plugin reads as a whole, and a sandbox grant is one
//     decision; merging their insides would produce a value neither layer
//     wrote.
//   - deadlines.<kind>, limits.<key>, turn.maxSteps and turn.compactAt:
//     the later layer wins, field by field, where it sets the field.
//   - provider: a layer that sets provider.plugin chooses that provider
//     (with its own provider.model, or none) and drops an earlier choice;
//     a layer that sets provider.openai chooses OpenAI, and its fields
//     override those of an earlier openai choice one by one (so a project
//     can change only the model).
//
// # Trust
//
// A repository's settings file ships with the repository: whoever wrote
// it is not the person running the host. LoadLayered reads the user's file
// and then a project's, and applies the project's only as far as the
// person trusts the project. It reports every key of the project's file it
// leaves out, so the host can say so.
//
//   - The user's file applies as in Load.
//   - sandbox and env are only ever taken from the user's file, whether the
//     project is trusted or not: a sandbox grant and a variable passed to a
//     plugin are the person's to give. A project file that sets them has
//     those keys listed in Loaded.UserOnly.
//   - A trusted project's file applies otherwise as Load's second file.
//   - An untrusted project's file applies its permissions.deny and .ask,
//     unioned in, and nothing of the person's: its permissions.allow,
//     deadlines, limits, turn bounds and provider are ignored, shorter or
//     longer (a deadline cut to a nanosecond makes the person's own guard
//     hook miss it, and a hook that misses decides nothing). Its
//     plugins.<name> applies only to the project's own plugins
//     (Project.Own), which ship with it anyway: any other name is a plugin
//     of the person's, which a repository must not feed config to. What
//     is ignored is listed in Loaded.Ignored.
//   - An untrusted project plugin (Project.Untrusted: in an untrusted
//     project, or one whose files changed since the person trusted it)
//     does not get what the user's file
//     gives a plugin of the same name, which the person wrote for their own
//     plugin: the user's plugins.<name> (the project's own plugins.<name>
//     stays), sandbox.<name>, and the pass list of env.plugins.<name>. Its
//     withhold list still applies, since it only narrows. What is kept back
//     is listed in Loaded.Withheld.
//
// # Refusals
//
// Settings are typed by hand, so mistakes are refused rather than guessed
// at: an unknown key (a typo would otherwise silently do nothing), a key
// given twice in one object, a value of the wrong type, a duration that
// does not parse or is not positive, a count that is not a positive whole
// number, an env entry that is not a variable's name. A malformed file is
// one *Error naming the file, the line and the column; none of that file
// applies and the other files still do. A file that does not exist is not
// an error, and neither is an empty one.
//
// A settings file is at most MaxFileSize (1 MiB). A larger one, or one
// that is not a regular file (reading a FIFO would block the host), is one
// *Error and none of it applies. Neither is ever read whole: the kind of
// file is checked before it is opened, the size before any of it is read,
// and reading stops past the limit in case the file grows meanwhile
// (package capped reads it).
//
// Permission patterns are checked by package gate, which owns their
// grammar. LoadLayered checks the project file's patterns with
// Project.ValidPattern when it is set, before applying the trust rules:
// a bad pattern is one *Error at its line and column and is dropped, and
// the rest of the file still applies, so a repository's typo cannot make
// every tool call fail. Plugin names under plugins, sandbox and env are not
// checked against the installed plugins, because settings are read before
// plugins load.
package settings
