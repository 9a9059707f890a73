package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
)

// How long, and how much of, the results cut for the model stay in
// Config.ResultsDir: they hold tool output (perhaps secrets), which
// would otherwise pile up there for ever. docs/plugins.md says so.
const (
	resultsMaxAge   = 7 * 24 * time.Hour
	resultsMaxBytes = 256 << 20
)

// A session that keeps a result holds the lock of its name in
// Config.ResultsDir (<session>.lock) until it closes or its process ends:
// that is how another session's pruner tells a live session's results,
// which bingo__read_result may still read, from a past one's.

// holdSession takes this session's lock, once, as its first result is
// kept. a.mu is held.
func (a *Agent) holdSession() error {
	if a.release.Load() != nil {
		return nil
	}
	unlock, err := diskrecord.Lock(filepath.Join(a.cfg.ResultsDir, a.cfg.Session))
	if errors.Is(err, errors.ErrUnsupported) {
		unlock, err = func() {}, nil // no locks here: others' pruners cannot tell
	}
	if err != nil {
		return err
	}
	a.release.Store(&unlock)
	return nil
}

// Close releases the session's lock on its kept results; they are a past
// session's from then on, pruned by the rules of pruneResults. It does
// not wait for a turn in progress.
func (a *Agent) Close() {
	if unlock := a.release.Swap(nil); unlock != nil {
		(*unlock)()
	}
}

// pruneResults removes, as a turn starts, past sessions' kept results
// older than resultsMaxAge, then, oldest first, those past
// resultsMaxBytes in all. The results of this session and of every
// other live one (whose lock is held) are left for bingo__read_result,
// as is anything but a regular *.txt file. A result that cannot be
// removed is one notice. a.mu is held.
func (a *Agent) pruneResults(now time.Time) {
	if a.cfg.ResultsDir == "" {
		return
	}
	entries, err := os.ReadDir(a.cfg.ResultsDir)
	if err != nil {
		return // none kept yet
	}
	type kept struct {
		name, session string
		mod           time.Time
		size          int64
	}
	var others []kept
	var total int64
	left := map[string]int{} // past sessions' results left, by session
	for _, e := range entries {
		if session, ok := strings.CutSuffix(e.Name(), ".lock"); ok && session != a.cfg.Session {
			left[session] += 0 // a lock with no results left is removed below
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		total += fi.Size()
		if session := sessionOf(e.Name()); session != a.cfg.Session {
			others = append(others, kept{e.Name(), session, fi.ModTime(), fi.Size()})
			left[session]++
		}
	}
	// Which of the other sessions are past: they have no lock (a session
	// takes it before it keeps a result), or it is free, and then held here
	// until pruning ends.
	past := map[string]bool{}
	for session := range left {
		lock := filepath.Join(a.cfg.ResultsDir, session)
		if _, err := os.Lstat(lock + ".lock"); errors.Is(err, os.ErrNotExist) {
			past[session] = true
			continue
		}
		unlock, err := diskrecord.TryLock(lock)
		if errors.Is(err, diskrecord.ErrLocked) {
			continue // live
		}
		past[session] = true
		if err == nil {
			defer unlock()
		}
	}
	slices.SortFunc(others, func(x, y kept) int { return x.mod.Compare(y.mod) })
	var failed []string
	for _, k := range others {
		if now.Sub(k.mod) <= resultsMaxAge && total <= resultsMaxBytes {
			break // the rest are newer, and all fits
		}
		if !past[k.session] {
			continue
		}
		if err := os.Remove(filepath.Join(a.cfg.ResultsDir, k.name)); err != nil && !os.IsNotExist(err) {
			failed = append(failed, k.name)
			continue
		}
		total -= k.size
		left[k.session]--
	}
	for session, n := range left {
		if n == 0 && past[session] {
			os.Remove(filepath.Join(a.cfg.ResultsDir, session+".lock"))
		}
	}
	if len(failed) > 0 {
		a.notice("warn", "%d tool results kept in %s could not be removed (older than %v, or past %d MiB in all): %s", len(failed), a.cfg.ResultsDir, resultsMaxAge, resultsMaxBytes>>20, strings.Join(failed, ", "))
	}
}

// sessionOf is the session that kept the result in file name: its id
// (keep) without its count.
func sessionOf(name string) string {
	id := strings.TrimSuffix(name, ".txt")
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[:i]
	}
	return id
}
