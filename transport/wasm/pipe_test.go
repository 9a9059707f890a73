package wasm

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestMemPipe: the buffer between a writer and a reader, either way
// between the host and a guest.
func TestMemPipe(t *testing.T) {
	t.Run("a full buffer holds the writer until the guest reads", func(t *testing.T) {
		s := newMemPipe()
		wrote := make(chan error, 1)
		go func() {
			_, err := s.Write(make([]byte, pipeBuffer+10))
			wrote <- err
		}()
		select {
		case err := <-wrote:
			t.Fatalf("a write past the buffer returned (%v) before any read", err)
		case <-time.After(50 * time.Millisecond):
		}
		n := 0
		for n < pipeBuffer+10 {
			m, err := s.Read(make([]byte, 4096))
			if err != nil {
				t.Fatal(err)
			}
			n += m
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("closed: what is left, then EOF", func(t *testing.T) {
		s := newMemPipe()
		s.Write([]byte("last"))
		s.closeWrite()
		if ready, _ := s.Poll(experimentalsys.POLLIN, 0); !ready {
			t.Fatal("not ready with data and EOF to read")
		}
		b, err := io.ReadAll(s)
		if string(b) != "last" || err != nil {
			t.Fatalf("read %q, %v", b, err)
		}
		if _, err := s.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
	})
	t.Run("released: a waiting writer fails", func(t *testing.T) {
		s := newMemPipe()
		wrote := make(chan error, 1)
		go func() {
			_, err := s.Write(make([]byte, pipeBuffer+1))
			wrote <- err
		}()
		time.Sleep(10 * time.Millisecond)
		s.release()
		if err := <-wrote; !errors.Is(err, os.ErrClosed) {
			t.Fatalf("write = %v, want os.ErrClosed", err)
		}
	})
	t.Run("poll waits for data or its timeout", func(t *testing.T) {
		s := newMemPipe()
		if ready, errno := s.Poll(experimentalsys.POLLIN, 0); ready || errno != 0 {
			t.Fatalf("empty poll(0) = %v, %v", ready, errno)
		}
		start := time.Now()
		if ready, _ := s.Poll(experimentalsys.POLLIN, 30); ready || time.Since(start) < 30*time.Millisecond {
			t.Fatalf("poll(30ms) = %v after %v", ready, time.Since(start))
		}
		go func() {
			time.Sleep(10 * time.Millisecond)
			s.Write([]byte("x"))
		}()
		if ready, _ := s.Poll(experimentalsys.POLLIN, -1); !ready {
			t.Fatal("poll(forever) returned without data")
		}
		if _, errno := s.Poll(experimentalsys.POLLOUT, 0); errno != experimentalsys.ENOTSUP {
			t.Fatalf("poll(POLLOUT) errno %v", errno)
		}
	})
	t.Run("non-blocking: EAGAIN when empty", func(t *testing.T) {
		s := newMemPipe()
		s.setNonblock(true)
		if _, err := s.Read(make([]byte, 1)); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("read = %v, want EAGAIN", err)
		}
	})
	t.Run("handoff: a write waits for its read", func(t *testing.T) {
		s := newMemPipe()
		s.handoff = func() bool { return true }
		wrote := make(chan error, 1)
		go func() {
			_, err := s.Write([]byte("line\n"))
			wrote <- err
		}()
		select {
		case err := <-wrote:
			t.Fatalf("the write returned (%v) before its read", err)
		case <-time.After(50 * time.Millisecond):
		}
		if n, err := s.Read(make([]byte, 2)); n != 2 || err != nil {
			t.Fatalf("read %d, %v", n, err)
		}
		select {
		case err := <-wrote:
			t.Fatalf("the write returned (%v) with 3 bytes unread", err)
		case <-time.After(20 * time.Millisecond):
		}
		s.Read(make([]byte, 10))
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no handoff: a write with room returns at once", func(t *testing.T) {
		s := newMemPipe()
		s.handoff = func() bool { return false }
		if _, err := s.Write([]byte("ahead\n")); err != nil {
			t.Fatal(err)
		}
		if !s.waiting() {
			t.Fatal("nothing waiting after a write")
		}
	})
	t.Run("broken: a waiting writer returns, and then a read fails", func(t *testing.T) {
		s := newMemPipe()
		s.handoff = func() bool { return true }
		wrote := make(chan error, 1)
		go func() {
			_, err := s.Write([]byte("never read"))
			wrote <- err
		}()
		time.Sleep(10 * time.Millisecond)
		s.breakRead(ErrKilled)
		select {
		case <-wrote: // its bytes were kept: what is written before a kill is read
		case <-time.After(10 * time.Second):
			t.Fatal("the writer still waits after the pipe broke")
		}
		io.ReadAll(io.LimitReader(s, int64(len("never read"))))
		if _, err := s.Read(make([]byte, 10)); !errors.Is(err, ErrKilled) {
			t.Fatalf("read = %v, want ErrKilled", err)
		}
	})
	t.Run("broken: what was written before is still read", func(t *testing.T) {
		s := newMemPipe()
		s.Write([]byte("answered\n"))
		s.closeWrite()
		s.breakRead(ErrKilled)
		b := make([]byte, 64)
		if n, err := s.Read(b); string(b[:n]) != "answered\n" || err != nil {
			t.Fatalf("read %q, %v", b[:n], err)
		}
		if _, err := s.Read(b); !errors.Is(err, ErrKilled) {
			t.Fatalf("read = %v, want ErrKilled", err)
		}
	})
	t.Run("the end wakes every waiter", func(t *testing.T) {
		s := newMemPipe()
		s.Write(make([]byte, pipeBuffer)) // full
		done := make(chan error, 4)
		for range 2 {
			go func() { _, err := s.Write([]byte("x")); done <- err }()
		}
		r := newMemPipe()
		for range 2 {
			go func() { _, err := r.Read(make([]byte, 1)); done <- err }()
		}
		time.Sleep(20 * time.Millisecond)
		s.release()
		r.closeWrite()
		for range 4 {
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a waiter returned without an error at the end")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a waiter still waits after the end")
			}
		}
	})
}
