package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host"
)

// (host.Quit), so a plugin that ignores both its stdin and SIGTERM is
// still gone when bingo is.
const quitGrace = 2 * time.Second

// interrupts returns the run's context: the first Ctrl-C cancels it (tools
// hear tool/cancel, providers provider/cancel, and the turn ends cleanly);
// a second one says "bingo: quitting", hushes the run, calls quit and
// exits with status 130. SIGTERM and SIGHUP (the terminal went away) quit
// at once, like a second Ctrl-C, exiting 128 + the signal's number. quit
// must return soon: it is what stops the plugins, which live in their own
// process groups and would otherwise outlive bingo.
//
// The returned stop waits for a quit in progress: stopping the plugins
// ends the turn, and the run returning its own status then would race the
// exit that the person asked for.
func (r *run) interrupts(quit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		interrupted := false
		for {
			select {
			case s := <-sig:
				if s == os.Interrupt && !interrupted {
					interrupted = true
					fmt.Fprintln(r.stderr, "\nbingo: interrupted; finishing what is running (Ctrl-C again to quit now)")
					cancel()
					continue
				}
				code := 130
				if s != os.Interrupt {
					code = 128 + int(s.(syscall.Signal))
				}
				if s != syscall.SIGHUP { // no one is left to read it
					fmt.Fprintln(r.stderr, "bingo: quitting")
				}
				r.hushed.Store(true)
				cancel()
				quit()
				exit := r.exit
				if exit == nil {
					exit = os.Exit
				}
				exit(code)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { close(done); <-finished; signal.Stop(sig); cancel() }
}

// hostCloser closes the host once, from whichever asks first: Main on its
// way out or a quit. The host may still be opening (starting its plugins)
// when the quit comes: quit then waits for the opening to end, so plugins
// it started are stopped too.
type hostCloser struct {
	h      atomic.Pointer[host.Host]
	opened chan struct{} // closed once Open has returned, host or not
}

func newHostCloser() *hostCloser { return &hostCloser{opened: make(chan struct{})} }

// set publishes the host Open returned (nil if it failed).
func (c *hostCloser) set(h *host.Host) {
	if h != nil {
		c.h.Store(h)
	}
	close(c.opened)
}

// close closes the host if it is open, as bingo exits: Host.Leave, which
// leaves the end of each exec plugin's stop to its shepherd (Host.Close
// and Leave are one, whichever comes first).
func (c *hostCloser) close() {
	if h := c.h.Load(); h != nil {
		h.Leave()
	}
}

// quit stops the host's plugins within d, however they behave: it waits
// for a host still opening (the run's context is cancelled, so opening
// ends soon), then has the host quit in what is left of d.
func (c *hostCloser) quit(d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.opened:
	case <-t.C:
		return
	}
	if h := c.h.Load(); h != nil {
		h.Quit(time.Until(deadline))
	}
}
