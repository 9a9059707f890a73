package shepherd

import (
	"syscall"
	"time"
)

// Stop is the stop sequence of an instance whose stdin has just been
// closed, the one rule both its runners follow: the exec transport for an
// instance it waits for, and a shepherd an exiting host has handed the
// stop to. A plugin's main loop reads stdin, so most are gone at once.
// One that is not within grace (busy in a call, or helpers that never saw
// stdin) gets SIGTERM, and one still there grace later SIGKILL. ended
// waits at most d and reports whether the instance has ended; signal
// sends a signal to the instance.
func Stop(grace time.Duration, ended func(d time.Duration) bool, signal func(syscall.Signal)) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if ended(grace) {
			return
		}
		signal(sig)
	}
}
