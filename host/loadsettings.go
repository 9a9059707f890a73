package host

import (
	"context"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// LoadSettings returns the settings a run in cfg.Cwd holds every plugin to
// (deadlines, limits, the provider, the turn), loaded as Open loads them:
// the person's file, then the project's as far as the person trusts it,
// with the same notices to cfg.Notify. It starts nothing and asks nothing
// (cfg.AskTrust is not used); it discovers no plugin either, so the keys
// of one plugin (plugins.<name>, sandbox.<name>, env.plugins.<name>) are
// the files' as written, not what an untrusted project's plugin of that
// name is given. `bingo plugins check` holds a plugin to these.
func LoadSettings(ctx context.Context, cfg Config) settings.Settings {
	if cfg.Notify == nil {
		cfg.Notify = func(bridge.Notice) {}
	}
	cfg.AskTrust = nil
	project, _ := projectOf(cfg)
	user := settings.ReadUser(userSettingsFile(cfg.Home))
	s, _, _ := loadSettings(cfg, user, project, assessTrust(ctx, cfg, project, nil, trust.NewSums(), envRule{}), nil)
	return s
}

// projectOf returns the project around cfg.Cwd ("" for none: the home
// directory's plugins are the person's own) and the plugin layers of a run.
func projectOf(cfg Config) (project string, layers []manifest.Layer) {
	project = manifest.ProjectRoot(cfg.Cwd)
	layers = manifest.Layers(cfg.Home, cfg.Cwd, cfg.PluginDirs)
	if !hasLayer(layers, manifest.LayerProject) {
		project = "" // the project is the home directory: its plugins are the user's
	}
	return project, layers
}
