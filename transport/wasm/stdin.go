package wasm

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// stdinEnd is the host's end of a guest's stdin: what the bridge writes
// goes to the guest.
type stdinEnd interface {
	io.Writer
	// guestEnd is what the guest reads: the reader given to wazero.
	guestEnd() io.Reader
	// closeWrite ends the input: the guest reads what is left, then EOF.
	closeWrite()
	// release frees the guest's end once the instance is gone.
	release()
}

// stdinBuffer is how many bytes the host may write ahead of a guest that
// does not read, as an OS pipe holds on Linux: past it the host's write
// waits, so a plugin that stops reading is seen as one (the bridge's
// write guard), not fed without end.
const stdinBuffer = 64 << 10

// memStdin is a metered guest's stdin: a bounded buffer in the host's
// memory, which the guest can wait on without an OS thread.
//
// An OS pipe was the stdin before it. A Go guest waiting for its next
// request then waits in poll(2), on an OS thread of its own, and each
// request had to wake that thread (tens of microseconds on a busy
// machine, a large part of a call). Waiting here is a goroutine parked on
// a channel: the host's write readies it, and it runs on the writer's own
// processor as soon as the writer waits for the answer.
//
// A Go guest asks for its stdin to be non-blocking, so that its reader
// parks in the runtime's poller and its other goroutines run meanwhile.
// wazero grants that only for an *os.File; for this reader the meter
// routes fd_fdstat_get and fd_fdstat_set_flags through hooks (stdinShim)
// that keep the mode here. In non-blocking mode a read finds data or
// returns EAGAIN; wazero's poll_oneoff waits in Poll.
type memStdin struct {
	mu       sync.Mutex
	buf      []byte
	closed   bool // the host's end is closed: EOF once buf is read
	gone     bool // the instance is released: writes fail
	nonblock bool

	// readable and writable each hold a wake-up for the other side: one
	// pending at most, so a waiter always re-checks under mu.
	readable chan struct{}
	writable chan struct{}
}

func newMemStdin() *memStdin {
	return &memStdin{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *memStdin) guestEnd() io.Reader { return s }

// Read is the guest's fd_read.
func (s *memStdin) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		if len(s.buf) > 0 {
			n := copy(p, s.buf)
			s.buf = s.buf[:copy(s.buf, s.buf[n:])]
			s.mu.Unlock()
			wake(s.writable)
			return n, nil
		}
		if s.closed || s.gone {
			s.mu.Unlock()
			return 0, io.EOF
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
func (s *memStdin) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
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

// Write is the host's: it waits while the buffer is full.
func (s *memStdin) Write(p []byte) (int, error) {
	written := 0
	for {
		s.mu.Lock()
		if s.closed || s.gone {
			s.mu.Unlock()
			return written, os.ErrClosed
		}
		n := min(stdinBuffer-len(s.buf), len(p)-written)
		s.buf = append(s.buf, p[written:written+n]...)
		written += n
		room := len(s.buf) < stdinBuffer
		s.mu.Unlock()
		if n > 0 {
			wake(s.readable)
		}
		if room {
			wake(s.writable) // for another writer
		}
		if written == len(p) {
			return written, nil
		}
		<-s.writable
	}
}

func (s *memStdin) closeWrite() { s.end(&s.closed) }
func (s *memStdin) release()    { s.end(&s.gone) }

func (s *memStdin) end(flag *bool) {
	s.mu.Lock()
	*flag = true
	s.mu.Unlock()
	wake(s.readable)
	wake(s.writable)
}

func (s *memStdin) setNonblock(on bool) {
	s.mu.Lock()
	s.nonblock = on
	s.mu.Unlock()
}

func (s *memStdin) isNonblock() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonblock
}

// osStdin is an unmetered guest's stdin (HostConfig.TerminationChecks):
// an OS pipe, which wazero lets a guest make non-blocking and poll by
// itself, as guests ran before the meter.
type osStdin struct{ r, w *os.File }

func newOSStdin() (*osStdin, error) {
	r, w, err := os.Pipe()
	return &osStdin{r, w}, err
}

func (s *osStdin) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *osStdin) guestEnd() io.Reader         { return s.r }
func (s *osStdin) closeWrite()                 { _ = s.w.Close() }
func (s *osStdin) release()                    { _ = s.r.Close() }

// The stdin shim: the meter points a metered guest's imports of
// fd_fdstat_get and fd_fdstat_set_flags at small functions of its own
// (meter.go, shimBody) that call wazero's and then a hook here, so that
// for fd 0 the non-blocking mode lives in memStdin. The hooks take the
// call's fd and argument and wazero's result, and return the result the
// guest sees.

// The WASI values the hooks use.
const (
	wasiFdflagNonblock     = 1 << 2
	wasiErrnoNosys         = 52
	wasiFiletypeOfMemStdin = 1 // FILETYPE_BLOCK_DEVICE: what wazero reports for a reader stdin
)

type stdinKey struct{}

// withStdin gives an instance's context its stdin, for the hooks.
func withStdin(ctx context.Context, s *memStdin) context.Context {
	return context.WithValue(ctx, stdinKey{}, s)
}

func stdinOf(ctx context.Context) *memStdin {
	s, _ := ctx.Value(stdinKey{}).(*memStdin)
	return s
}

// afterFdstatGet adds the non-blocking flag to wazero's fdstat of fd 0,
// which wazero never sets for a reader stdin. The file type is checked,
// so that a file a guest opened after closing its stdin, given fd 0, is
// reported as wazero sees it.
func afterFdstatGet(ctx context.Context, mod api.Module, stack []uint64) {
	fd, buf, errno := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	stack[0] = uint64(errno)
	s := stdinOf(ctx)
	if fd != 0 || errno != 0 || s == nil || !s.isNonblock() {
		return
	}
	mem := mod.Memory()
	if ft, ok := mem.ReadByte(buf); !ok || ft != wasiFiletypeOfMemStdin {
		return
	}
	if flags, ok := mem.ReadUint16Le(buf + 2); ok {
		mem.WriteUint16Le(buf+2, flags|wasiFdflagNonblock)
	}
}

// afterFdstatSetFlags keeps fd 0's non-blocking mode in memStdin. wazero
// refuses the mode for a reader stdin (ENOSYS) and accepts the rest; it
// has already refused the flags it never takes (EINVAL), and a closed fd
// 0 (EBADF), whose errors stand.
func afterFdstatSetFlags(ctx context.Context, _ api.Module, stack []uint64) {
	fd, flags, errno := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	s := stdinOf(ctx)
	if fd == 0 && s != nil && (errno == 0 || errno == wasiErrnoNosys) {
		s.setNonblock(flags&wasiFdflagNonblock != 0)
		errno = 0
	}
	stack[0] = uint64(errno)
}

// stdinHooks are the shimmed WASI functions, each with its hook's name
// in the meter's module and the hook.
var stdinHooks = []struct {
	wasi, hook string
	fn         api.GoModuleFunc
}{
	{"fd_fdstat_get", "after_fd_fdstat_get", afterFdstatGet},
	{"fd_fdstat_set_flags", "after_fd_fdstat_set_flags", afterFdstatSetFlags},
}

// stdinHook is the index in stdinHooks of an import the shim wraps, or -1.
func stdinHook(module, name string) int {
	if module != "wasi_snapshot_preview1" {
		return -1
	}
	for i, h := range stdinHooks {
		if h.wasi == name {
			return i
		}
	}
	return -1
}
