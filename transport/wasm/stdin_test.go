package wasm

import (
	"errors"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter/wasmtest"
	"github.com/tetratelabs/wazero/sys"
)

// Instructions of the stdio tests.
func i32c(v int32) []byte { return append([]byte{0x41}, wasmtest.S32(nil, v)...) }

var (
	call = func(fn byte) []byte { return []byte{0x10, fn} }
	drop = []byte{0x1A}
	add  = []byte{0x6A}
	mul  = []byte{0x6C}
	and  = []byte{0x71}
	// fd 0's fdstat flags, nonblock bit only: fd_fdstat_get(0, 100), then
	// the u16 at 102, & 4.
	stdinNonblock = cat(i32c(0), i32c(100), call(1), drop, i32c(102), []byte{0x2F, 1, 0}, i32c(4), and)
	setNonblock   = func(fd int32) []byte { return cat(i32c(fd), i32c(4), call(2)) }
	// fd_read(0) of up to 16 bytes into 300: leaves nread*100 + errno.
	readStdin = cat(
		i32c(200), i32c(300), []byte{0x36, 2, 0}, // iov at 200: buf 300,
		i32c(204), i32c(16), []byte{0x36, 2, 0}, // len 16
		i32c(0), i32c(200), i32c(1), i32c(208), call(3),
		i32c(208), []byte{0x28, 2, 0}, i32c(100), mul, add)
	exit = call(0)
)

func exitCode(t *testing.T, err error) uint32 {
	t.Helper()
	var e *sys.ExitError
	if !errors.As(err, &e) {
		t.Fatalf("Wait = %v, want an exit code", err)
	}
	return e.ExitCode()
}

// TestStdinShim: a metered guest can make its stdin, and only its stdin,
// non-blocking through the meter's shim, and sees the mode it set; the
// same call on another fd gets wazero's own answer (stdout, a writer
// wazero cannot make non-blocking: ENOSYS, 52).
func TestStdinShim(t *testing.T) {
	bin := stdioCommand(
		stdinNonblock, i32c(100000), mul, // before: 0
		setNonblock(0), drop,
		stdinNonblock, i32c(1000), mul, add, // after: 4
		setNonblock(1), add, // fd 1's errno
		exit)
	p := startModule(t, sharedHost, writeModule(t, "m.wasm", bin))
	if got := exitCode(t, waitWithin(t, p.conn, 10*time.Second)); got != 4052 {
		t.Fatalf("exit code %d, want 4052: blocking at first (0), non-blocking once set (4), fd 1 left to wazero (52)", got)
	}
}

// TestStdinReads: a guest reading its stdin in blocking mode (as a guest
// that never asks otherwise does) waits for the host's write; in
// non-blocking mode an empty stdin answers EAGAIN at once.
func TestStdinReads(t *testing.T) {
	t.Run("blocking", func(t *testing.T) {
		p := startModule(t, sharedHost, writeModule(t, "m.wasm", stdioCommand(readStdin, exit)))
		time.Sleep(50 * time.Millisecond)
		select {
		case <-waitDone(p):
			t.Fatal("the read returned before anything was written")
		default:
		}
		if _, err := p.conn.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		if got := exitCode(t, waitWithin(t, p.conn, 10*time.Second)); got != 300 {
			t.Fatalf("exit code %d, want 300: 3 bytes read, errno 0", got)
		}
	})
	t.Run("non-blocking", func(t *testing.T) {
		p := startModule(t, sharedHost, writeModule(t, "m.wasm", stdioCommand(setNonblock(0), drop, readStdin, exit)))
		const wasiEagain = 6
		if got := exitCode(t, waitWithin(t, p.conn, 10*time.Second)); got != wasiEagain {
			t.Fatalf("exit code %d, want EAGAIN (%d), nothing read", got, wasiEagain)
		}
	})
}

// TestAnswerWrittenAheadOutlivesKill: a guest that answers while its next
// request waits writes the answer ahead; if that request kills it, and
// the host kills what is left of it (as the bridge does once the wire
// ends), the answer is still read.
func TestAnswerWrittenAheadOutlivesKill(t *testing.T) {
	p := startProbe(t, sharedHost, Config{})
	// The second request comes once the guest has read the first, while
	// it sleeps on it, so that it waits in the pipe when the guest answers.
	if _, err := p.conn.Write([]byte("sleep 500\n")); err != nil {
		t.Fatal(err)
	}
	for p.conn.(*conn).in.waiting() {
		time.Sleep(time.Millisecond)
	}
	if _, err := p.conn.Write([]byte("panic boom\n")); err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(t, p.conn, 20*time.Second); err == nil {
		t.Fatal("the guest did not die of its panic")
	}
	p.conn.Kill()
	if got := p.line(); got == "" {
		t.Fatal("no answer to sleep")
	}
}
