package bridge

import "time"

// Clock is the one time the bridge reads: every deadline, the wedge rule,
// the idle stop and the backoff take it from Options.Clock, so a test moves
// it instead of sleeping. nil is the system's (SystemClock).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer sends the time on the Timer's C once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's timer: a *time.Timer's Stop and Reset, and its
// channel (nil for one AfterFunc made).
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the system's clock, package time.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) AfterFunc(d time.Duration, f func()) Timer {
	return systemTimer{time.AfterFunc(d, f)}
}

func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.Timer.C }

// since is the time passed since t by the plugin's clock.
func (p *Plugin) since(t time.Time) time.Duration { return p.opts.Clock.Now().Sub(t) }
