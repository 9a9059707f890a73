package bridge

import (
	"sync"
	"sync/atomic"
	"time"
)

// readerHandoff hands the reader's role of a wire between its reading
// goroutine (wire.run) and callers waiting for their answers: a caller
// reads the stream itself while no one else does, so one call in flight
// wakes only the caller, not a reader that would hand the answer over
// (what it saves: docs/performance.md). Whoever reads classifies the line
// and handles it holding the role; a request of the plugin's, and the
// stream's end, go to run, which serves and ends. It needs a read
// deadline to wake a blocked read (transport.ReadDeadliner).
type readerHandoff struct {
	setDeadline func(time.Time) error
	role        chan struct{} // holds the token while no one holds the role
	wake        chan struct{} // run may have something to do
	handBack    *time.Timer   // run's, while callers come
	turnReads   atomic.Uint64 // lines callers have read (readTurn)
	seen        uint64        // run's: the enters counted at its last look

	mu      sync.Mutex
	callers int      // between enter and leave
	entered uint64   // enters so far
	back    bool     // run may read: no caller for a handBack
	pending *message // a request a caller read for run; it holds the role
	ended   error    // the error that ended the stream, met by a caller
}

// handBack is how often run looks whether callers have stopped coming,
// while they come: the last caller out does not wake it (that would cost
// what the hand-over did), so a line the plugin sends between calls waits
// at most twice this. It is the system's time, not Options.Clock: it
// paces goroutines, it decides nothing a test would move the clock for.
const handBack = 5 * time.Millisecond

func newReaderHandoff(setDeadline func(time.Time) error) *readerHandoff {
	h := &readerHandoff{setDeadline: setDeadline, role: make(chan struct{}, 1), wake: make(chan struct{}, 1), back: true}
	h.role <- struct{}{}
	h.handBack = time.NewTimer(handBack)
	h.handBack.Stop()
	return h
}

// enter counts a caller in as waiting for an answer: until a handBack
// passes with no caller, run leaves the reading to callers, and a read it
// has in progress is woken to hand the role over.
func (h *readerHandoff) enter() {
	h.mu.Lock()
	h.callers++
	h.entered++
	back := h.back
	h.back = false
	h.mu.Unlock()
	if back {
		h.interrupt()
	}
}

// leave counts a caller out. It does not give up the role: see readTurn.
func (h *readerHandoff) leave() {
	h.mu.Lock()
	h.callers--
	h.mu.Unlock()
}

// roleReady is received from to take the reader's role; its holder reads
// one line (wire.readTurn) or gives it back (release).
func (h *readerHandoff) roleReady() <-chan struct{} { return h.role }

// release gives the role back.
func (h *readerHandoff) release() { h.role <- struct{}{} }

// interrupt wakes the read in progress, if any, by a read deadline in the
// past: its reader looks again at whether it should be reading. Every
// reader clears the deadline before it reads, then checks.
func (h *readerHandoff) interrupt() { _ = h.setDeadline(time.Unix(1, 0)) }

// beginTurn starts a caller's turn, holding the role: it reports whether
// to read, or, when over reports true, gives the role back. Whatever can
// end a caller's wait while it reads calls interrupt after over would
// report true.
func (h *readerHandoff) beginTurn(over func() bool) bool {
	_ = h.setDeadline(time.Time{})
	if over() { // after clearing the deadline: an interrupt from the wait's end came before
		h.release()
		return false
	}
	return true
}

// leaveToRun hands run, with the role, what a caller's turn read and
// cannot handle: a request (m), or the stream's end (err).
func (h *readerHandoff) leaveToRun(m *message, err error) {
	h.mu.Lock()
	h.pending, h.ended = m, err
	h.mu.Unlock()
	select { // wake run, if it waits
	case h.wake <- struct{}{}:
	default:
	}
}

// runTurn is run's wait for something to do: a request a caller left it
// (the role given back), the stream's end a caller met, or the role, when
// no caller has come for a handBack (m and err nil: run reads one line
// holding it).
func (h *readerHandoff) runTurn() (*message, error) {
	for {
		h.mu.Lock()
		m, ended, busy := h.pending, h.ended, !h.back
		h.pending = nil
		h.mu.Unlock()
		switch {
		case m != nil:
			h.release()
			return m, nil
		case ended != nil:
			return nil, ended
		case busy:
			h.handBack.Reset(handBack)
			select {
			case <-h.wake:
				h.handBack.Stop()
			case <-h.handBack.C:
				h.mu.Lock()
				h.back = h.callers == 0 && h.entered == h.seen
				h.seen = h.entered
				h.mu.Unlock()
			}
			continue
		}
		select {
		case <-h.wake:
			continue
		case <-h.role:
		}
		_ = h.setDeadline(time.Time{})
		h.mu.Lock()
		busy = !h.back // after clearing the deadline: an enter's interrupt came before
		h.mu.Unlock()
		if busy {
			h.release()
			continue
		}
		return nil, nil
	}
}
