package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// errUntrusted is the reason an untrusted project's exec plugin was not
// started; the plugin's listing says why in the person's words.
var errUntrusted = errors.New("not started: its project is not trusted")

// loadSettings reads the person's settings and the project's, the
// project's as far as the person trusts it, and says in one notice each
// what of the project's file did not apply. It returns the settings in
// force and the environment variables the person's provider key is read
// from, which plugins do not see unless the person passes them on.
func loadSettings(cfg Config, user settings.User, project string, t *projectTrust, found []*manifest.Manifest) (s settings.Settings, env envRule, skipped []string) {
	notify := cfg.Notify
	userFile := userSettingsFile(cfg.Home)
	p := settings.Project{Trusted: t.settings, ValidPattern: gate.Valid,
		Own: map[string]bool{}, Untrusted: map[string]bool{}}
	if project != "" {
		p.File = filepath.Join(project, ".bingo", "settings.json")
	}
	for _, m := range found {
		if m.Layer == manifest.LayerProject {
			p.Own[m.Name] = true
			p.Untrusted[m.Name] = !t.trusted(m)
		}
	}
	l := user.Layered(p)
	for _, err := range l.Errs {
		msg := err.Error()
		var fe *settings.Error
		if errors.As(err, &fe) && slices.Contains(l.Skipped, fe.File) {
			msg += "; the whole file is skipped"
		}
		notify(bridge.Notice{Level: "error", Message: msg})
	}
	if len(l.Ignored) > 0 {
		notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("%s applies only its deny and ask rules until you trust this project, so these keys are ignored: %s; %s",
			p.File, strings.Join(l.Ignored, ", "), howToTrust(project))})
	}
	if len(l.UserOnly) > 0 {
		notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("%s sets %s, which only your own %s may set; ignored",
			p.File, strings.Join(l.UserOnly, " and "), userFile)})
	}
	if len(l.Withheld) > 0 {
		notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("your %s in %s are not given to the untrusted project's plugins of those names; %s",
			strings.Join(l.Withheld, ", "), userFile, howToTrust(project))})
	}
	s = keyStaysHome(l.Settings, l.User, p.File, notify)
	// The environment rule is the user's file's alone (env is user-only),
	// less the passes an untrusted plugin is not given (l.Settings).
	return s, envRule{environ: cfg.Environ, env: s.Env, keyEnv: keyEnvOf(l.User)}, l.Skipped
}

func userSettingsFile(home string) string { return settings.Files(home, "")[0] }

// keyEnvOf names the variable the person's provider key is read from, by
// their own settings user: kept from plugins unless passed on.
func keyEnvOf(user settings.Settings) []string {
	if o := user.Provider.OpenAI; o != nil && o.APIKeyEnv != "" {
		return []string{o.APIKeyEnv}
	}
	return nil
}

// envRule is what of the person's environment (environ) each plugin is
// given: all but what env withholds from it and the provider's key
// variables (settings.Env.Filter). A plugin's ${VAR}s expand from that
// alone, when it starts and when it is pinned: an entry cannot read
// what its own process could not.
type envRule struct {
	environ []string
	env     settings.Env
	keyEnv  []string
}

// userEnvRule is the environment rule of the person's own settings file
// in home, which alone sets it, as a project's plugins get it once
// trusted.
func userEnvRule(home string, environ []string) envRule {
	return envRuleOf(settings.ReadUser(userSettingsFile(home)).Settings(), environ)
}

// envRuleOf is the environment rule that settings s set over environ.
func envRuleOf(s settings.Settings, environ []string) envRule {
	return envRule{environ: environ, env: s.Env, keyEnv: keyEnvOf(s)}
}

func (r envRule) of(name string) []string { return r.env.Filter(name, r.environ, r.keyEnv) }

// resolve reads m's ${VAR}s from what r gives the plugin, which is also
// what its process inherits (given); a variable r keeps from it is named
// in the error with how the person hands it over.
func (r envRule) resolve(m *manifest.Manifest) (resolved *manifest.Manifest, given []string, err error) {
	given = r.of(m.Name)
	if resolved, err = m.Resolve(given); err != nil {
		return nil, nil, r.unresolved(m.Name, err)
	}
	return resolved, given, nil
}

// Resolve is m as a run starts it by the person's own settings in home
// (the defaults' for home ""), with the environment its process is given:
// its ${VAR}s read only what the environment rule gives it of environ.
// What bingo does with a plugin outside a run (bingo plugins check, bingo
// mcp login) reads no more.
func Resolve(home string, m *manifest.Manifest, environ []string) (*manifest.Manifest, []string, error) {
	if home == "" {
		return envRuleOf(settings.Default(), environ).resolve(m)
	}
	return userEnvRule(home, environ).resolve(m)
}

// keyStaysHome sends an API key only to the endpoint the user's own file
// sends it to, trusted project or not: a project may choose the model but
// not where the person's key goes.
func keyStaysHome(s, user settings.Settings, projectFile string, notify func(bridge.Notice)) settings.Settings {
	if o, u := s.Provider.OpenAI, user.Provider.OpenAI; o != nil && o.APIKeyEnv != "" &&
		(u == nil || u.BaseURL != o.BaseURL || u.APIKeyEnv != o.APIKeyEnv) {
		notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("%s would send $%s to %s; an API key goes only where your own ~/.bingo/settings.json sends it, so none is sent",
			projectFile, o.APIKeyEnv, o.BaseURL)})
		keyless := *o
		keyless.APIKeyEnv = ""
		s.Provider.OpenAI = &keyless
	}
	return s
}

// rank orders plugins for names only one may keep (slash commands): a
// --plugin-dir first (named by the person for this run), then a trusted
// project, then the person's own plugins, and an untrusted project's
// last, so a repository cannot take /deploy from the person's own plugin
// before the person trusts it.
func (h *Host) rank(m *manifest.Manifest) int {
	switch m.Layer {
	case manifest.LayerDir:
		return 3
	case manifest.LayerProject:
		if h.trust.trusted(m) {
			return 2
		}
		return 0
	}
	return 1
}

func hasLayer(layers []manifest.Layer, name string) bool {
	for _, l := range layers {
		if l.Name == name {
			return true
		}
	}
	return false
}

// unresolved says why plugin's entry could not be expanded (err, from
// manifest.Manifest.Resolve): a variable the person has but does not give
// this plugin is named as not given, with how to hand it over.
func (r envRule) unresolved(plugin string, err error) error {
	var unset *manifest.UnsetError
	if !errors.As(err, &unset) {
		return err
	}
	var withheld, missing []string
	has := manifest.LookupIn(r.environ)
	for _, name := range unset.Names {
		if _, ok := has(name); ok {
			withheld = append(withheld, name)
		} else {
			missing = append(missing, name)
		}
	}
	if len(withheld) == 0 {
		return err
	}
	is, it := "is", "it"
	if len(withheld) > 1 {
		is, it = "are", "them"
	}
	msg := fmt.Sprintf("%s %s not given to this plugin: your settings withhold %s or read your provider's key from %s; naming %s in env.plugins.%s.pass in your own settings file hands %s over",
		manifest.VarList(withheld), is, it, it, it, plugin, it)
	if len(missing) > 0 {
		msg += "; and " + (&manifest.UnsetError{Names: missing}).Error()
	}
	return errors.New(msg)
}
