package manifest

import (
	"runtime"
	"sort"
	"strings"
)

// Environ returns the environment an exec plugin runs with: host (usually
// os.Environ()) with entry.env added, entry.env winning on a clash. A host
// variable that entry.env sets is dropped rather than left duplicated, so
// the child sees one value whatever its libc does with duplicates. Host
// order is kept, and entry.env follows in name order. The result is a new
// slice; host is not modified.
//
// A wasm plugin does not use this: it gets entry.env alone, never the
// host's environment (where API keys live).
func (m *Manifest) Environ(host []string) []string {
	env := m.Entry.Env
	out := make([]string, 0, len(host)+len(env))
	set := make(map[string]bool, len(env))
	for k := range env {
		set[foldKey(k)] = true
	}
	for _, kv := range host {
		if set[foldKey(envKey(kv))] {
			continue
		}
		out = append(out, kv)
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+env[k])
	}
	return out
}

// envKey returns the name of one "NAME=value" entry. The search starts at
// the second byte because Windows keeps per-drive entries like "=C:=C:\x".
func envKey(kv string) string {
	if i := strings.IndexByte(kv[min(1, len(kv)):], '='); i >= 0 {
		return kv[:i+min(1, len(kv))]
	}
	return kv
}

// foldKey makes names compare as the platform compares them: Windows
// environment names ignore case.
func foldKey(k string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(k)
	}
	return k
}
