package trust

import "sort"

// Lapse says how one plugin, as it is now, differs from a trust record.
type Lapse struct {
	Plugin  string
	New     bool     // not in the record: added since
	Changed []string // relpaths (slash-separated, from the project root) whose record differs, sorted
}

// Check reports whether now, a plugin as [Snapshot] sees it, is exactly as
// p recorded it, and if not, how it differs: New if p has no plugin of
// that name, else the files whose records differ (one recorded and no
// longer named, or named and not recorded, counts as differing). Check
// compares only; it does not look at Declined, so a declined record
// matches too, and what a match means is the caller's decision.
func (p Project) Check(now Plugin) (trusted bool, lapse Lapse) {
	lapse.Plugin = now.Name
	rec, ok := p.Plugins[now.Name]
	if !ok {
		lapse.New = true
		return false, lapse
	}
	if rec.Digest != "" && rec.Digest == now.Digest {
		return true, lapse
	}
	for rel, r := range rec.Files {
		if n, ok := now.Files[rel]; !ok || n != r {
			lapse.Changed = append(lapse.Changed, rel)
		}
	}
	for rel := range now.Files {
		if _, ok := rec.Files[rel]; !ok {
			lapse.Changed = append(lapse.Changed, rel)
		}
	}
	sort.Strings(lapse.Changed)
	return false, lapse
}

// SettingsTrusted reports whether now, the project's [SettingsRecord], is
// the one p recorded. A missing settings file is always trusted: there is
// nothing in it to honour. Like Check it does not look at Declined.
func (p Project) SettingsTrusted(now string) bool {
	return now == recMissing || (p.Settings != "" && now == p.Settings)
}
