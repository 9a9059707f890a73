package wasm

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// pipeBuffer is how many bytes a memPipe holds unread, as an OS pipe does
// on Linux. Past it a write waits: a host writing to a guest that stops
// reading is seen as a wedge by the bridge's write guard, and a guest
// flooding its stdout waits for the host, neither fed nor kept without
// end.
const pipeBuffer = 64 << 10

// memPipe is a bounded byte pipe in the host's memory between the host
// and a metered guest: the guest's stdin, and its stdout.
//
// As stdin it replaces an OS pipe. A Go guest waiting for its next
// request then waited in poll(2), on an OS thread of its own, and each
// request had to wake that thread (a quarter of a call). Waiting here is
// a goroutine parked on a channel: the host's write readies it, and it
// runs on the writer's own processor as soon as the writer waits for the
// answer. A Go guest asks for its stdin to be non-blocking, so that its
// reader parks in the runtime's poller and its other goroutines run
// meanwhile; wazero grants that only for an *os.File, so the meter routes
// fd_fdstat_get and fd_fdstat_set_flags through hooks (stdin.go) that
// keep the mode here. In non-blocking mode a read finds data or returns
// EAGAIN, and wazero's poll_oneoff waits in Poll.
//
// As stdout it replaces an io.Pipe, whose every write waited for the
// host's read. A write still waits until the host has read it when
// handoff says so: the guest has no input waiting, so its next step
// would be to wait for some, and the processor is better spent on the
// host's reader, which delivers the answer. With input waiting (calls in
// flight), the guest writes ahead and goes on to the next request while
// the host's reader catches up on another processor: 16 calls in flight
// answer 1.2 times as many calls a second, and a lone call is no slower.
type memPipe struct {
	mu       sync.Mutex
	buf      []byte
	closed   bool  // the writer is done: EOF once buf is read
	gone     bool  // the reader is gone: writes fail
	readErr  error // what a read answers at once, once set
	nonblock bool  // a read of an empty pipe answers EAGAIN

	// handoff, if set, says whether a write waits until what it wrote is
	// read.
	handoff func() bool

	// Each channel holds one wake-up at most, so a waiter always
	// re-checks under mu: readable for a reader (data, or the end),
	// writable for a writer waiting for room, drained for a writer
	// waiting for the buffer to empty.
	readable, writable, drained chan struct{}
}

// The guest's stdin is polled through wazero's experimental Pollable: a
// drift in its signature would make wazero take stdin as always ready,
// and a waiting Go guest spin.
var _ experimentalsys.Pollable = (*memPipe)(nil)

func newMemPipe() *memPipe {
	return &memPipe{
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		drained:  make(chan struct{}, 1),
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Read waits for data, unless the pipe is non-blocking.
func (s *memPipe) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		if len(s.buf) > 0 {
			n := copy(p, s.buf)
			s.buf = s.buf[:copy(s.buf, s.buf[n:])]
			empty := len(s.buf) == 0
			s.mu.Unlock()
			wake(s.writable)
			if empty {
				wake(s.drained)
			}
			return n, nil
		}
		if s.readErr != nil || s.closed || s.gone {
			err := s.readErr
			if err == nil {
				err = io.EOF
			}
			s.mu.Unlock()
			wake(s.readable) // for another reader
			return 0, err
		}
		nonblock := s.nonblock
		s.mu.Unlock()
		if nonblock {
			return 0, syscall.EAGAIN
		}
		<-s.readable
	}
}

// Poll is how wazero's poll_oneoff waits for the guest's stdin: until
// there is data or EOF, or timeoutMillis pass (never, if negative).
func (s *memPipe) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	if flag != experimentalsys.POLLIN {
		return false, experimentalsys.ENOTSUP
	}
	var timeout <-chan time.Time
	if timeoutMillis > 0 {
		t := time.NewTimer(time.Duration(timeoutMillis) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	for {
		s.mu.Lock()
		ready := len(s.buf) > 0 || s.closed || s.gone
		s.mu.Unlock()
		if ready || timeoutMillis == 0 {
			return ready, 0
		}
		select {
		case <-s.readable:
		case <-timeout:
			return false, 0
		}
	}
}

// Write waits while the buffer is full, and then, if handoff says so,
// until what it wrote is read.
func (s *memPipe) Write(p []byte) (int, error) {
	written := 0
	for {
		s.mu.Lock()
		if s.closed || s.gone {
			s.mu.Unlock()
			wake(s.writable) // for another writer
			return written, os.ErrClosed
		}
		n := min(pipeBuffer-len(s.buf), len(p)-written)
		s.buf = append(s.buf, p[written:written+n]...)
		written += n
		room := len(s.buf) < pipeBuffer
		s.mu.Unlock()
		if n > 0 {
			wake(s.readable)
		}
		if room {
			wake(s.writable) // for another writer
		}
		if written == len(p) {
			break
		}
		<-s.writable
	}
	if s.handoff != nil && s.handoff() {
		s.waitDrained()
	}
	return written, nil
}

func (s *memPipe) waitDrained() {
	for {
		s.mu.Lock()
		empty, gone := len(s.buf) == 0, s.gone
		s.mu.Unlock()
		if gone {
			wake(s.drained) // for another writer
		}
		if empty || gone {
			return
		}
		<-s.drained
	}
}

// waiting reports whether there is data not yet read.
func (s *memPipe) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf) > 0
}

func (s *memPipe) guestEnd() io.Reader { return s }

// closeWrite ends the writing: the reader reads what is left, then EOF.
func (s *memPipe) closeWrite() { s.end(func() { s.closed = true }) }

// release ends the reading: writes fail, and a read finds EOF.
func (s *memPipe) release() { s.end(func() { s.gone = true }) }

// breakRead ends both sides: writes fail, and a read answers err once
// what was written before is read. Those bytes are kept because a guest
// that writes ahead can be killed (or exit, and be killed by a caller
// seeing its wire end) before the host has read an answer it gave.
func (s *memPipe) breakRead(err error) {
	s.end(func() { s.gone, s.readErr = true, err })
}

func (s *memPipe) end(set func()) {
	s.mu.Lock()
	set()
	s.mu.Unlock()
	wake(s.readable)
	wake(s.writable)
	wake(s.drained)
}

func (s *memPipe) setNonblock(on bool) {
	s.mu.Lock()
	s.nonblock = on
	s.mu.Unlock()
}

func (s *memPipe) isNonblock() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonblock
}
