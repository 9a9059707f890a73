package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// How long, and how much of, the results cut for the model stay in
// Config.ResultsDir: they hold tool output (perhaps secrets), which
// would otherwise pile up there for ever. docs/plugins.md says so.
const (
	resultsMaxAge   = 7 * 24 * time.Hour
	resultsMaxBytes = 256 << 20
)

// pruneResults removes, as a turn starts, the kept results older than
// resultsMaxAge, then, oldest first, those past resultsMaxBytes in all.
// This session's own are left for bingo__read_result (its ids begin with
// Config.Session), as is anything but a regular *.txt file. A result that
// cannot be removed is one notice. a.mu is held.
func (a *Agent) pruneResults(now time.Time) {
	if a.cfg.ResultsDir == "" {
		return
	}
	entries, err := os.ReadDir(a.cfg.ResultsDir)
	if err != nil {
		return // none kept yet
	}
	type kept struct {
		name string
		mod  time.Time
		size int64
	}
	var others []kept
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		total += fi.Size()
		if !strings.HasPrefix(e.Name(), a.cfg.Session+"-") {
			others = append(others, kept{e.Name(), fi.ModTime(), fi.Size()})
		}
	}
	slices.SortFunc(others, func(x, y kept) int { return x.mod.Compare(y.mod) })
	var failed []string
	for _, k := range others {
		if now.Sub(k.mod) <= resultsMaxAge && total <= resultsMaxBytes {
			break // the rest are newer, and all fits
		}
		if err := os.Remove(filepath.Join(a.cfg.ResultsDir, k.name)); err != nil && !os.IsNotExist(err) {
			failed = append(failed, k.name)
			continue
		}
		total -= k.size
	}
	if len(failed) > 0 {
		a.notice("warn", "%d tool results kept in %s could not be removed (older than %v, or past %d MiB in all): %s", len(failed), a.cfg.ResultsDir, resultsMaxAge, resultsMaxBytes>>20, strings.Join(failed, ", "))
	}
}
