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
//	  "deadlines":   {"tool": "60s", "hook": "150ms"},
//	  "sandbox":     {"wordcount-wasm": {"writable": false, "memoryMiB": 256}},
//	  "provider":    {"plugin": "myplugin/fast"},
//	  "turn":        {"maxSteps": 20, "compactAt": 200000}
//	}
//
// provider is either {"plugin": "<plugin>/<providerId>"} or
// {"openai": {"baseURL": "...", "model": "...", "apiKeyEnv": "OPENAI_API_KEY"}},
// never both in one file.
//
// # Merging
//
// A later file wins, with one deliberate exception:
//
//   - permissions.allow, .deny and .ask are unioned across the layers, in
//     order and without repeats. A project can add rules but cannot remove
//     one: a repository you cloned must not be able to lift your deny.
//   - plugins.<name> and sandbox.<name> are replaced whole, per name, by the
//     later layer. A plugin's config slice is one document the plugin reads
//     as a whole, and a sandbox grant is one decision; merging their insides
//     would produce a value neither layer wrote.
//     The host honours sandbox grants from the user's own file only (a
//     repository's settings ship with the repository's plugins, so they
//     may not widen those plugins' sandbox), and sends an API key only to
//     the endpoint the user's own file sends it to: see host.Open.
//   - deadlines.<kind>, turn.maxSteps and turn.compactAt: the later layer
//     wins, field by field, where it sets the field.
//   - provider: a layer that sets provider.plugin chooses that provider and
//     drops an earlier openai choice; a layer that sets provider.openai
//     chooses OpenAI, and its fields override those of an earlier openai
//     choice one by one (so a project can change only the model).
//
// # Refusals
//
// Settings are typed by hand, so mistakes are refused rather than guessed
// at: an unknown key (a typo would otherwise silently do nothing), a key
// given twice in one object, a value of the wrong type, a duration that
// does not parse or is not positive, a count that is not a positive whole
// number. A malformed file is one *Error naming the file, the line and the
// column; none of that file applies and the other files still do. A file
// that does not exist is not an error, and neither is an empty one.
//
// Permission patterns are checked by package gate, which owns their
// grammar; plugin names under plugins and sandbox are not checked against
// the installed plugins, because settings are read before plugins load.
package settings
