package bridge

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// readerHandoff is the wire as jsonrpc2 reads it (its ObjectStream), with
// the reader's role handed between jsonrpc2's reading goroutine
// (ReadObject) and callers waiting for their answers: a caller reads the
// stream itself while no one else does, so one call in flight wakes only
// the caller, not a reader that would hand the answer over (why and what
// it saves: docs/design.md). Whoever reads hands a notification or an
// answer to notify or answer, and leaves any other line to ReadObject.
// Without a read deadline to wake a blocked read, only ReadObject reads.
type readerHandoff struct {
	*protocol.LineStream
	notify      func(method string, params json.RawMessage)
	answer      func(line []byte) bool // reports whether it took the line
	setDeadline func(time.Time) error  // nil: only ReadObject reads
	role        chan struct{}          // holds the token while no one holds the role
	wake        chan struct{}          // ReadObject may have something to do
	handBack    *time.Timer            // ReadObject's, while callers come
	turnReads   atomic.Uint64          // lines callers have read (readTurn)

	mu      sync.Mutex
	callers int    // between enter and leave
	entered uint64 // enters so far
	back    bool   // ReadObject may read: no caller for a handBack
	pending []byte // a line a caller read for ReadObject; it holds the role
	ended   error  // the error that ended the stream, met by a caller
}

// handBack is how often ReadObject looks whether callers have stopped
// coming, while they come: the last caller out does not wake it (that
// would cost what the hand-over did), so a line the plugin sends between
// calls waits at most twice this.
const handBack = 5 * time.Millisecond

func newReaderHandoff(s *protocol.LineStream, notify func(string, json.RawMessage), answer func([]byte) bool, setDeadline func(time.Time) error) *readerHandoff {
	h := &readerHandoff{LineStream: s, notify: notify, answer: answer, setDeadline: setDeadline}
	if setDeadline != nil {
		h.role, h.wake = make(chan struct{}, 1), make(chan struct{}, 1)
		h.role <- struct{}{}
		h.back = true
		h.handBack = time.NewTimer(handBack)
		h.handBack.Stop()
	}
	return h
}

// turns reports whether callers may read (the wire has a read deadline).
func (h *readerHandoff) turns() bool { return h.setDeadline != nil }

// enter counts a caller in as waiting for an answer: until a handBack
// passes with no caller, ReadObject leaves the reading to callers, and a
// read it has in progress is woken to hand the role over. Only with turns.
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
// one line (readTurn) or gives it back (release).
func (h *readerHandoff) roleReady() <-chan struct{} { return h.role }

// release gives the role back unused.
func (h *readerHandoff) release() { h.role <- struct{}{} }

// interrupt wakes the read in progress, if any, by a read deadline in the
// past: its reader looks again at whether it should be reading. Every
// reader clears the deadline before it reads, then checks.
func (h *readerHandoff) interrupt() {
	if h.setDeadline != nil {
		_ = h.setDeadline(time.Unix(1, 0))
	}
}

// offer hands line to notify or answer, and reports whether one took it.
func (h *readerHandoff) offer(line []byte) bool {
	if method, params, ok := protocol.NotificationOf(line); ok {
		h.notify(method, params)
		return true
	}
	return h.answer(line)
}

// readTurn reads one line holding the role and gives the role up: a line
// offer takes releases it, any other goes to ReadObject with the role, as
// does the stream's end (no one reads after it). It reads nothing when
// over reports true; whatever can end a caller's wait while it reads
// calls interrupt after over would report true.
func (h *readerHandoff) readTurn(over func() bool) {
	_ = h.setDeadline(time.Time{})
	if over() { // after clearing the deadline: an interrupt from the wait's end came before
		h.release()
		return
	}
	line, err := h.ReadLine()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.release()
		return
	case err == nil:
		h.turnReads.Add(1)
		if h.offer(line) {
			h.release()
			return
		}
	}
	h.mu.Lock()
	h.pending, h.ended = line, err
	h.mu.Unlock()
	h.nudge()
}

// nudge wakes ReadObject, if it waits, to look at the turns again.
func (h *readerHandoff) nudge() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// ReadObject reads the next message offer does not take into v.
//
// It holds the role until the line is decoded: a line that is not a
// message is written to the plugin's log before anyone reads the next.
// Released first, a caller could read its answer, and a one-shot bingo
// end the run on it, before the skipped line reached the log.
func (h *readerHandoff) ReadObject(v any) error {
	for {
		line, holding, err := h.nextLine()
		if err != nil {
			return err
		}
		ok := h.Decode(line, v)
		if holding {
			h.release()
		}
		if ok {
			return nil
		}
	}
}

// nextLine is ReadObject's next line that offer did not take: one it
// reads itself while no caller waits, or one a caller read for it. The
// end of the stream, when a caller met it, comes last. holding reports
// that the role is still held for the line, for ReadObject to release.
func (h *readerHandoff) nextLine() (line []byte, holding bool, err error) {
	if h.setDeadline == nil {
		for {
			line, err := h.ReadLine()
			if err != nil || !h.offer(line) {
				return line, false, err
			}
		}
	}
	var seen uint64 // the enters counted at the last look
	for {
		h.mu.Lock()
		line, ended, busy := h.pending, h.ended, !h.back
		h.pending = nil
		h.mu.Unlock()
		switch {
		case line != nil:
			return line, true, nil // the caller left it with the line
		case ended != nil:
			return nil, false, ended
		case busy:
			h.handBack.Reset(handBack)
			select {
			case <-h.wake:
				h.handBack.Stop()
			case <-h.handBack.C:
				h.mu.Lock()
				h.back = h.callers == 0 && h.entered == seen
				seen = h.entered
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
		line, err := h.ReadLine()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			h.release()
			continue
		case err != nil:
			return nil, false, err // past the end, the role stays taken: no one reads after it
		}
		// Offered holding the role: a caller that takes it next must find
		// its answer already delivered, or it would read on for it.
		if !h.offer(line) {
			return line, true, nil
		}
		h.release()
	}
}
