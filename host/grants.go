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
func loadSettings(cfg Config, project string, t *projectTrust, found []*manifest.Manifest) (s settings.Settings, keyEnv, skipped []string) {
	notify := cfg.Notify
	userFile := settings.Files(cfg.Home, "")[0]
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
	l := settings.LoadLayered(userFile, p)
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
	if o := l.User.Provider.OpenAI; o != nil && o.APIKeyEnv != "" {
		keyEnv = []string{o.APIKeyEnv}
	}
	return s, keyEnv, l.Skipped
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
