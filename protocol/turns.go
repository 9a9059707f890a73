package protocol

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Callers' turns at reading. A host that sends a request and waits for
// its answer would otherwise have the answer read by the connection's
// reading goroutine (ReadObject's) and handed over: a channel send and a
// goroutine woken, on a 2-core machine tens of microseconds per call. With
// turns, a caller waiting for its answer reads the stream itself when no
// one else is reading, so the common case (one call in flight) wakes
// nothing but the caller, from the poller, as a bare client would be.
//
// One goroutine at a time holds the reader's role, a token: it alone reads
// from the stream. ReadObject takes it only while no caller is waiting
// (Enter to Leave). A caller holding it reads one line at a time
// (ReadTurn): a notification or an answer goes to its callback, as
// ReadObject would have sent it, and any other line is left for
// ReadObject with the role, which it returns once ReadObject has taken
// the line — so a ReadObject that has stopped reading (a handler holding
// it up) stops the callers reading too, as it stopped the stream before.
// A read that ends the stream is kept for ReadObject to return, with the
// role: no one reads after it.
//
// The last caller out does not wake ReadObject: waking a goroutine costs
// about what the hand-over did, and so would arming a timer per call.
// While callers come, ReadObject looks every HandBack, and reads again
// once a whole HandBack has passed with no caller coming and none
// waiting. Calls in quick succession pass the role from one to the next
// and wake no one; a line the plugin sends between calls waits at most
// twice HandBack for ReadObject.
//
// A reader blocked in a read cannot notice that it should let another
// have the role: Enter and Interrupt set the stream's read deadline in the
// past, which wakes it, and every reader clears the deadline before it
// reads, and checks after that whether it should read at all.

// errInterrupted is a read woken by Interrupt, with nothing lost: what it
// had of a line is kept for the next read.
var errInterrupted = errors.New("read interrupted to hand over the reader's role")

// HandBack is how often ReadObject looks whether callers have stopped
// coming, while they come.
const HandBack = 5 * time.Millisecond

type turns struct {
	setDeadline func(time.Time) error // nil: only ReadObject reads
	role        chan struct{}         // holds the token while no one holds the role
	wake        chan struct{}         // ReadObject may have something to do
	handBack    *time.Timer           // ReadObject's, while callers come
	turnReads   atomic.Uint64         // lines callers have read (ReadTurn)

	mu      sync.Mutex
	callers int    // between Enter and Leave
	entered uint64 // Enters so far
	back    bool   // ReadObject may read: no caller for a HandBack
	pending []byte // a line a caller read for ReadObject; it holds the role
	ended   error  // the error that ended the stream, met by a caller
}

func (t *turns) init(setDeadline func(time.Time) error) {
	t.setDeadline = setDeadline
	if setDeadline == nil {
		return // no turns: the reader's role is never handed over
	}
	t.role, t.wake = make(chan struct{}, 1), make(chan struct{}, 1)
	t.role <- struct{}{}
	t.back = true
	t.handBack = time.NewTimer(HandBack)
	t.handBack.Stop()
}

// TurnReads is how many lines callers have read in turns (ReadTurn), for
// tests and diagnostics: the reads ReadObject was spared.
func (s *LineStream) TurnReads() uint64 { return s.turnReads.Load() }

// Turns reports whether callers may read (LineStreamOptions.SetReadDeadline).
func (s *LineStream) Turns() bool { return s.setDeadline != nil }

// Enter counts a caller in as waiting for an answer: from now until a
// HandBack with no caller, ReadObject leaves the reading to callers, and
// if it was reading, its read is woken to hand the role over. Only with
// Turns.
func (s *LineStream) Enter() {
	s.mu.Lock()
	s.callers++
	s.entered++
	back := s.back
	s.back = false
	s.mu.Unlock()
	if back {
		s.Interrupt()
	}
}

// Leave counts a caller out. It does not give up the role: see ReadTurn.
func (s *LineStream) Leave() {
	s.mu.Lock()
	s.callers--
	s.mu.Unlock()
}

// Role is received from to take the reader's role; its holder reads one
// line (ReadTurn) or gives it back (Release).
func (s *LineStream) Role() <-chan struct{} { return s.role }

// Release gives the role back unused.
func (s *LineStream) Release() { s.role <- struct{}{} }

// Interrupt wakes the read in progress, if any: its reader looks again at
// whether it should be reading. A caller's context ending calls it, so a
// caller blocked in ReadTurn returns.
func (s *LineStream) Interrupt() {
	if s.setDeadline != nil {
		_ = s.setDeadline(time.Unix(1, 0))
	}
}

// ReadTurn reads one line holding the role and gives the role up: a
// notification or an answer goes to its callback, any other line to
// ReadObject, with the role. It reads nothing when over reports true; a
// caller whose wait can end while it reads has whatever ends it call
// Interrupt, after over would report true.
func (s *LineStream) ReadTurn(over func() bool) {
	_ = s.setDeadline(time.Time{})
	if over() { // after clearing the deadline: an Interrupt from the wait's end came before
		s.Release()
		return
	}
	line, err := s.readLine()
	switch {
	case errors.Is(err, errInterrupted):
		s.Release()
		return
	case len(line) > 0:
		s.turnReads.Add(1)
	}
	switch {
	case errors.Is(err, ErrLineTooLong):
		s.skip(line, err)
		s.Release()
		return
	}
	if s.offer(line) {
		line = nil
	}
	rest := len(bytes.TrimSpace(line)) > 0
	if !rest && err == nil {
		s.Release()
		return
	}
	// The role goes with what ReadObject is left, or ends with the stream.
	s.mu.Lock()
	if rest {
		s.pending = line
	}
	if err != nil {
		s.ended = err
	}
	s.mu.Unlock()
	s.poke()
}

// poke wakes ReadObject, if it waits, to look at the turns again.
func (s *LineStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// interrupted reports whether err is a read woken by Interrupt.
func (s *LineStream) interrupted(err error) bool {
	return s.setDeadline != nil && errors.Is(err, os.ErrDeadlineExceeded)
}

// nextLine is ReadObject's next line: one it reads itself while no caller
// waits, or one a caller read for it. With turns, every line has been
// offered to the callbacks already (offered), by whoever read it. The end
// of the stream, when a caller met it, comes last.
func (s *LineStream) nextLine() (line []byte, offered bool, err error) {
	if s.setDeadline == nil {
		line, err = s.readLine()
		return line, false, err
	}
	var seen uint64 // the Enters counted at the last look
	for {
		s.mu.Lock()
		line, ended, busy := s.pending, s.ended, !s.back
		s.pending = nil
		s.mu.Unlock()
		switch {
		case line != nil:
			if ended == nil {
				s.Release() // the caller left it with the line
			}
			return line, true, nil
		case ended != nil:
			return nil, true, ended
		case busy:
			s.handBack.Reset(HandBack)
			select {
			case <-s.wake:
				s.handBack.Stop()
			case <-s.handBack.C:
				s.mu.Lock()
				s.back = s.callers == 0 && s.entered == seen
				seen = s.entered
				s.mu.Unlock()
			}
			continue
		}
		select {
		case <-s.wake:
			continue
		case <-s.role:
		}
		_ = s.setDeadline(time.Time{})
		s.mu.Lock()
		busy = !s.back // after clearing the deadline: an Enter's Interrupt came before
		s.mu.Unlock()
		if busy {
			s.Release()
			continue
		}
		line, err = s.readLine()
		switch {
		case errors.Is(err, errInterrupted):
			s.Release()
			continue
		case errors.Is(err, ErrLineTooLong):
			s.Release()
			return line, false, err
		}
		// Offered holding the role: a caller that takes it next must find
		// its answer already delivered, or it would read on for it.
		if s.offer(line) {
			line = nil
		}
		if err == nil {
			s.Release()
		} // past the end, the role stays taken: no one reads after it
		return line, true, err
	}
}
