package settings

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Project is a project's settings file and how far the person trusts it.
type Project struct {
	// File is <project>/.bingo/settings.json; "" means no project.
	File    string
	Trusted bool
	// Own names the project's own plugins (the project layer's plugin
	// names).
	Own map[string]bool
	// Untrusted names the project's own plugins the person has not
	// trusted (trust is per plugin: one whose files changed lapses alone,
	// even in a trusted project). They do not get what the user's file
	// gives a plugin of their name.
	Untrusted map[string]bool
	// ValidPattern, if set, checks one permission pattern (the gate owns
	// the grammar).
	ValidPattern func(string) error
}

// Loaded is what LoadLayered read.
type Loaded struct {
	// Settings is what is in force.
	Settings Settings
	// User is the user's file alone over Default: what the host compares
	// the project's choices against.
	User Settings
	// Ignored are the keys of the project file not applied because the
	// project is untrusted, dotted ("permissions.allow", "deadlines.tool",
	// "limits.providerResponseMiB", "plugins.deploy", "provider",
	// "turn.maxSteps"), in file order,
	// without repeats.
	Ignored []string
	// UserOnly are the keys of the project file never applied from a
	// project, trusted or not: "sandbox", "env".
	UserOnly []string
	// Withheld is what the user's file gives a plugin name that the
	// untrusted project plugin of that name does not get:
	// "plugins.X", "sandbox.X", "env.plugins.X".
	Withheld []string
	// Errs are *Error values: one per file not applied, as Load's errs,
	// and one per pattern dropped from the project file.
	Errs []error
	// Skipped are the files not applied at all, for an error in Errs:
	// what they set is not in force, and a message about a missing
	// setting must not read as if the person had not set it.
	Skipped []string
}

// LoadLayered reads the user's settings file and then a project's, which
// applies as far as the person trusts the project: see the package doc.
// Like Load, it skips a file that does not exist, reports a file it does
// not apply as one *Error, and always returns usable Settings.
func LoadLayered(userFile string, p Project) Loaded {
	return ReadUser(userFile).Layered(p)
}

// User is the user's settings file, read once. What it alone sets
// (Settings) is needed before the host knows how far it trusts a project:
// the environment each plugin is given, by which a project's entries are
// resolved to be pinned, comes from the user's file only.
type User struct {
	file string
	l    *layer // nil: no file, or one not applied (err)
	err  error
}

// ReadUser reads the user's settings file.
func ReadUser(file string) User {
	l, err := read(file)
	return User{file: file, l: l, err: err}
}

// Settings is the user's file alone over Default: Default when it does not
// exist or is not applied for an error.
func (u User) Settings() Settings {
	s := Default()
	if u.l != nil {
		s.apply(u.l)
	}
	return s
}

// Layered is LoadLayered over the user's file u.
func (u User) Layered(p Project) Loaded {
	var ld Loaded
	if u.err != nil {
		ld.Errs = append(ld.Errs, u.err)
		ld.Skipped = append(ld.Skipped, u.file)
	}
	// Applied to each separately, so that they share no maps.
	ld.User, ld.Settings = u.Settings(), u.Settings()
	l := &layer{} // a project without a settings file sets nothing
	if p.File != "" {
		if l = ld.read(p.File); l == nil {
			l = &layer{}
		}
	}
	if p.ValidPattern != nil {
		ld.Errs = append(ld.Errs, dropInvalid(p.File, l, p.ValidPattern)...)
	}
	ld.restrict(l, p.Trusted, p.Own)
	ld.Settings.apply(l)
	// Even with no settings file of its own, an untrusted project's
	// plugin must not inherit what the person gave a plugin of its name.
	ld.withhold(l, p.Untrusted)
	return ld
}

// read returns a file's layer, or nil when there is none to apply.
func (ld *Loaded) read(file string) *layer {
	l, err := read(file)
	if err != nil {
		ld.Errs = append(ld.Errs, err)
		ld.Skipped = append(ld.Skipped, file)
		return nil
	}
	return l
}

// dropInvalid removes from l's permission lists, in file order, the
// patterns valid refuses, returning one *Error for each of the first
// shownInvalid and one more saying how many others there are: a file of
// many thousand bad patterns is a few lines to read, not thousands.
func dropInvalid(file string, l *layer, valid func(string) error) []error {
	var errs []error
	more, first := 0, place{}
	for _, key := range l.keys {
		if top, _, _ := strings.Cut(key, "."); top != "permissions" {
			continue
		}
		list, _ := get[[]string](l, key)
		where := l.patternAt[key]
		var kept []string
		for i, pat := range list {
			err := valid(pat)
			switch {
			case err == nil:
				kept = append(kept, pat)
			case len(errs) < shownInvalid:
				errs = append(errs, &Error{File: file, Line: where[i].line, Col: where[i].col,
					Err: fmt.Errorf("%s %q: %w; this pattern is ignored", key, pat, err)})
			default:
				if more == 0 {
					first = where[i]
				}
				more++
			}
		}
		l.set[key] = kept
	}
	if more > 0 {
		errs = append(errs, &Error{File: file, Line: first.line, Col: first.col,
			Err: fmt.Errorf("%d more permission patterns, from here on, are not valid either; they are ignored", more)})
	}
	return errs
}

// shownInvalid is how many invalid patterns of a file are reported one by
// one.
const shownInvalid = 5

// restrict drops from a project's layer l what the project may not set,
// reporting each key it drops, as each key's Layer says (keys.go): the
// user-only keys always, and, unless the project is trusted, whatever
// would widen what is in force (ld.User).
func (ld *Loaded) restrict(l *layer, trusted bool, own map[string]bool) {
	for _, key := range l.keys {
		top, sub, _ := strings.Cut(key, ".")
		layer := layerOf(spelling(top, sub))
		if layer == LayerUser {
			ld.UserOnly = appendNew(ld.UserOnly, top)
			l.drop(top)
			continue
		}
		if trusted {
			continue
		}
		var keep bool
		switch layer {
		case LayerEvery:
			keep = true
		case LayerOwn:
			// A project configures its own plugins, never the person's.
			keep = own[sub]
		}
		if !keep {
			if k, _ := lookup(top); k.OneOf {
				key = top // chosen whole
			}
			ld.Ignored = appendNew(ld.Ignored, key)
			l.drop(key)
		}
	}
}

// withhold keeps from each untrusted project plugin what the
// user's file gives a plugin of that name: the person wrote it for their
// own plugin. A project's own plugins.<name> stays. Of env.plugins.<name>
// only pass is kept back: its withhold only narrows, so it still applies.
func (ld *Loaded) withhold(l *layer, untrusted map[string]bool) {
	s, user := &ld.Settings, ld.User
	for _, name := range slices.Sorted(maps.Keys(untrusted)) {
		if !untrusted[name] {
			continue
		}
		if _, ok := user.Plugins[name]; ok {
			if !l.has("plugins." + name) {
				delete(s.Plugins, name)
			}
			ld.Withheld = append(ld.Withheld, "plugins."+name)
		}
		if _, ok := user.Sandbox[name]; ok {
			delete(s.Sandbox, name)
			ld.Withheld = append(ld.Withheld, "sandbox."+name)
		}
		if _, ok := user.MCP[name]; ok {
			delete(s.MCP, name)
			ld.Withheld = append(ld.Withheld, "mcp."+name)
		}
		if pe, ok := user.Env.Plugins[name]; ok && len(pe.Pass) > 0 {
			pe.Pass = nil
			s.Env.Plugins[name] = pe
			ld.Withheld = append(ld.Withheld, "env.plugins."+name)
		}
	}
}

// appendNew appends x to list unless list holds it already.
func appendNew(list []string, x string) []string {
	if slices.Contains(list, x) {
		return list
	}
	return append(list, x)
}
