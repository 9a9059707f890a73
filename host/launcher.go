package host

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// LauncherInitialize is the least handshake deadline of a plugin started
// through a package runner (launchers): its first start downloads and
// installs the package before the plugin can answer, and `npx -y` of an
// official MCP server took longer than the default 10s. A person's
// deadlines.initialize above it is kept.
const LauncherInitialize = 2 * time.Minute

// launchers are the package runners a manifest's command may start a
// plugin through: the command's base name, then the arguments that make it
// fetch and run a package.
var launchers = [][]string{{"npx"}, {"pnpx"}, {"bunx"}, {"uvx"}, {"pipx", "run"}, {"pnpm", "dlx"}, {"uv", "tool", "run"}}

// launchedDeadlines is d, with room for an install in the handshake of a
// plugin started through a package runner.
func launchedDeadlines(m *manifest.Manifest, d bridge.Deadlines) bridge.Deadlines {
	cmd := append([]string{filepath.Base(m.Entry.Command)}, m.Entry.Args...)
	for _, l := range launchers {
		if len(cmd) >= len(l) && slices.Equal(cmd[:len(l)], l) {
			d.Initialize = max(d.Initialize, LauncherInitialize)
			break
		}
	}
	return d
}
