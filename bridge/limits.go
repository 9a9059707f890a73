package bridge

import (
	"fmt"
	"strconv"
	"sync"
	"time"
)

// MaxPluginRequests bounds the requests of one plugin instance to the host
// (service/call) that are being answered at once. Past it, the host stops
// reading from that plugin until one of them is answered: backpressure,
// not refusal. A refusal is an answer too, and a plugin flooding requests
// while not reading its answers would block those writes all the same; and
// a plugin fanning out many calls gets every one answered, late, rather
// than errors it must retry. The cost falls on the plugin that caused it:
// while it is at the bound, its answers and deltas wait behind its
// requests, and the host's deadlines bound that wait as any other.
//
// Each request being answered holds a goroutine and its params: 64 small
// requests are tens of KiB, where a flood of them, unbounded, would grow
// the host without bound. (Their params are bounded only by the line cap, Options.MaxLine.)
const MaxPluginRequests = 64

// A plugin's own notices (bingo.host notice) reach the person at a rate: a
// burst of NoticeBurst, then one every NoticeEvery (a token bucket, per
// plugin, across its respawns). A notice past the rate is not shown: it
// goes to the plugin's log, and is counted. The count is summarised in one
// line, "… and 99,990 more notices; see its log (path)", as soon as the
// bucket next has a token (so a flood that goes on costs the terminal one
// line every NoticeEvery), and at Close. The plugin's request is answered
// at once either way, so a flood costs neither the terminal nor memory.
const (
	NoticeBurst = 10
	NoticeEvery = time.Second
)

// noticeLimiter is the token bucket a plugin's own notices pass through.
// Options.Raise is called with mu held, so the notices, the summary and
// the notice after it reach the person in order.
type noticeLimiter struct {
	p *Plugin

	mu         sync.Mutex
	tokens     float64 // up to NoticeBurst
	filled     time.Time
	suppressed int    // notices not shown since the last summary
	level      string // the most severe of them
	timer      Timer  // summarises them once the bucket has a token
}

// raise shows n if the bucket has a token, and otherwise logs and counts
// it for the summary. Notices waiting for their summary are summarised
// first, so what the person reads stays in order.
func (l *noticeLimiter) raise(n Notice) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	if l.suppressed > 0 && l.tokens >= 1 {
		l.summarise()
	}
	if l.suppressed == 0 && l.tokens >= 1 {
		l.tokens--
		l.p.opts.Raise(n)
		return
	}
	fmt.Fprintf(l.p.opts.Log, "bridge: notice not shown (more than %d, then one a %s): %s: %s\n", NoticeBurst, NoticeEvery, n.Level, n.Message)
	l.suppressed++
	if levelRank(n.Level) > levelRank(l.level) {
		l.level = n.Level
	}
	l.arm()
}

// refill adds the tokens earned since the last refill.
func (l *noticeLimiter) refill() {
	now := l.p.opts.Clock.Now()
	if l.filled.IsZero() {
		l.tokens = NoticeBurst
	} else {
		l.tokens = min(NoticeBurst, l.tokens+float64(now.Sub(l.filled))/float64(NoticeEvery))
	}
	l.filled = now
}

// arm sets the timer for the moment the bucket next has a token, unless it
// is set.
func (l *noticeLimiter) arm() {
	if l.timer == nil {
		l.timer = l.p.opts.Clock.AfterFunc(time.Duration((1-l.tokens)*float64(NoticeEvery)), l.due)
	}
}

// due is the timer's: the summary, if the token it waited for is there.
func (l *noticeLimiter) due() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	if l.suppressed == 0 {
		return
	}
	if l.refill(); l.tokens < 1 {
		l.arm() // woken a little early
		return
	}
	l.summarise()
}

// summarise shows the one line that stands for the notices not shown,
// spending a token if there is one (at Close there may be none).
func (l *noticeLimiter) summarise() {
	l.tokens = max(l.tokens-1, 0)
	l.p.opts.Raise(Notice{Plugin: l.p.opts.Name, Level: l.level,
		Message: fmt.Sprintf("… and %s more notices; see %s", thousands(l.suppressed), l.p.logName())})
	l.suppressed, l.level = 0, ""
}

// close summarises what is left: no timer outlives the plugin.
func (l *noticeLimiter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.suppressed > 0 {
		l.summarise()
	}
}

// levelRank orders notice levels by severity.
func levelRank(level string) int {
	switch level {
	case "info":
		return 1
	case "warn":
		return 2
	case "error":
		return 3
	}
	return 0
}

// thousands writes n with its thousands separated by commas: 99,990.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
