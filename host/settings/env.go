package settings

import (
	"runtime"
	"strings"
)

// Env is env in the user's settings file: which of the host's environment
// variables exec plugins do not see. The host's environment holds the
// person's tokens and keys, and a plugin needs few of them.
type Env struct {
	// Withhold is kept from every exec plugin.
	Withhold []string
	// Plugins holds env.plugins.<name>, per plugin name.
	Plugins map[string]PluginEnv
}

// PluginEnv is what one plugin, by name, does not see beyond Env.Withhold,
// and what it sees after all.
type PluginEnv struct {
	// Withhold is kept from this plugin as well.
	Withhold []string
	// Pass is given to this plugin even where Env.Withhold, Withhold or
	// the host's defaults would keep it.
	Pass []string
}

// Filter returns environ (NAME=value entries) without the variables
// withheld from the named plugin: e.Withhold, e.Plugins[name].Withhold,
// and defaults (the host passes its provider API key variable), except
// those e.Plugins[name].Pass names. environ is not modified. Names compare
// as the operating system compares them: ignoring case on Windows.
func (e Env) Filter(name string, environ []string, defaults []string) []string {
	pe := e.Plugins[name]
	withheld := make(map[string]bool)
	for _, list := range [][]string{e.Withhold, pe.Withhold, defaults} {
		for _, v := range list {
			withheld[envKey(v)] = true
		}
	}
	for _, v := range pe.Pass {
		delete(withheld, envKey(v))
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !withheld[envKey(k)] {
			out = append(out, kv)
		}
	}
	return out
}

// envKey is the form in which the operating system compares variable
// names.
func envKey(name string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(name)
	}
	return name
}
