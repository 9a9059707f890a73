package manifest

import (
	"path/filepath"
	"slices"
	"time"
)

// InstallAllowance is the least handshake deadline of a plugin started
// through a package runner (see StartAllowance): its first start downloads
// and installs the package before the plugin can answer, and `npx -y` of an
// official MCP server took longer than the default 10s.
const InstallAllowance = 2 * time.Minute

// packageRunners are the commands that fetch a package and run it: the
// command's base name, then the arguments that make it do so.
var packageRunners = [][]string{{"npx"}, {"pnpx"}, {"bunx"}, {"uvx"}, {"pipx", "run"}, {"pnpm", "dlx"}, {"uv", "tool", "run"}}

// StartAllowance is the least time the entry's handshake should be given:
// InstallAllowance when its command is a package runner (npx, pnpx, bunx,
// uvx, pipx run, pnpm dlx, uv tool run), which may install the plugin
// first; 0 otherwise. A later start is fast, so the allowance costs only a
// plugin that hangs.
func (e Entry) StartAllowance() time.Duration {
	if e.Command == "" {
		return 0
	}
	cmd := append([]string{filepath.Base(e.Command)}, e.Args...)
	for _, r := range packageRunners {
		if len(cmd) >= len(r) && slices.Equal(cmd[:len(r)], r) {
			return InstallAllowance
		}
	}
	return 0
}
