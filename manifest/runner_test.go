package manifest_test

import (
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// A package runner's first start may install the plugin: its handshake
// gets the allowance; any other command, and a runner used otherwise
// (pipx without run), does not.
func TestStartAllowance(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want bool
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory"}, true},
		{"/usr/local/bin/uvx", []string{"mcp-server-git"}, true},
		{"pipx", []string{"run", "srv"}, true},
		{"uv", []string{"tool", "run", "srv"}, true},
		{"pnpm", []string{"dlx", "srv"}, true},
		{"pipx", []string{"install", "srv"}, false},
		{"uv", []string{"run", "srv.py"}, false},
		{"node", []string{"server.js"}, false},
		{"python3", nil, false},
	} {
		got := manifest.Entry{Command: c.cmd, Args: c.args}.StartAllowance() == manifest.InstallAllowance
		if got != c.want {
			t.Errorf("%s %v: allowance %v, want %v", c.cmd, c.args, got, c.want)
		}
	}
	if a := (manifest.Entry{Wasm: "/p/plugin.wasm"}).StartAllowance(); a != 0 {
		t.Errorf("a wasm entry: allowance %s, want none", a)
	}
}
