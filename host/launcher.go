package host

import (
	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// launchedDeadlines is d with the handshake the plugin's entry needs at
// least (a package runner may install it first: Entry.StartAllowance). A
// person's longer deadlines.initialize is kept.
func launchedDeadlines(m *manifest.Manifest, d bounds.Deadlines) bounds.Deadlines {
	d.Initialize = max(d.Initialize, m.Entry.StartAllowance())
	return d
}
