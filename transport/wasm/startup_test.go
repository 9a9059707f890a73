package wasm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/transport"
)

// freshHost is a Host of the test's own, without a disk cache, closed at
// the end: a test that fails by hanging closes it to end the hang, which
// must not take the shared Host down.
func freshHost(t *testing.T) *Host {
	t.Helper()
	h, err := NewHost(context.Background(), HostConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, h, 30*time.Second) })
	return h
}

type startResult struct {
	conn transport.Conn
	err  error
}

func goStart(ctx context.Context, tr *Transport) <-chan startResult {
	ch := make(chan startResult, 1)
	go func() {
		c, err := tr.Start(ctx)
		ch <- startResult{c, err}
	}()
	return ch
}

// awaitStart returns Start's result. If Start has not returned within
// limit, it closes h (which ends any start) and fails the test.
func awaitStart(t *testing.T, h *Host, ch <-chan startResult, limit time.Duration) startResult {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-timer.C:
		closeWithin(t, h, 30*time.Second)
		<-ch
		t.Fatalf("Start did not return within %v", limit)
	}
	return startResult{}
}

// closeWithin closes h, failing the test if Close takes longer than d.
func closeWithin(t *testing.T, h *Host, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.Close(context.Background()) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Host.Close = %v", err)
		}
	case <-timer.C:
		t.Fatalf("Host.Close did not return within %v", d)
	}
}

// Config.Path must be a regular file of at most MaxModuleSize: anything
// else is refused at once, before it is opened or read, with one line
// naming the plugin and the file. Before, /dev/zero was read until the
// host died of OOM, and a FIFO blocked the compile forever, and with it
// Host.Close.
func TestModuleFileRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero.wasm")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.wasm")
	f, err := os.Create(huge)
	if err == nil {
		err = f.Truncate(MaxModuleSize + 1<<20) // sparse: no disk is used
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	const todo = ": entry.wasm must name the plugin's .wasm file"
	tests := []struct{ path, want string }{
		{fifo, fifo + " is a named pipe, not a regular file" + todo},
		{"/dev/zero", "/dev/zero is a character device, not a regular file" + todo},
		{zeroLink, zeroLink + " is a character device, not a regular file" + todo},
		{dir, dir + " is a directory, not a regular file" + todo},
		{huge, huge + " is 257 MiB, over the 256 MiB limit on a module" + todo},
	}
	h := freshHost(t)
	for _, tt := range tests {
		tr := h.Transport(Config{Path: tt.path, Name: "bad"})
		r := awaitStart(t, h, goStart(context.Background(), tr), 30*time.Second)
		if want := "wasm plugin bad: " + tt.want; r.err == nil || r.err.Error() != want {
			t.Errorf("Start(%s) = %v\nwant %s", tt.path, r.err, want)
		}
	}
	if n := h.compiles.Load(); n != 0 {
		t.Errorf("%d compilations started; a refused file must not be read", n)
	}
	closeWithin(t, h, 30*time.Second)
}

// A compilation stuck reading its file (a hung file system; a FIFO or
// device never gets this far) must not hold up Host.Close, and must still
// end once its read does.
func TestCloseDoesNotWaitForAStuckRead(t *testing.T) {
	h := freshHost(t)
	pr, pw := io.Pipe()
	// Registered and run as compiled() does, with a read that blocks.
	m := &module{done: make(chan struct{})}
	h.mu.Lock()
	h.modules["stuck.wasm"] = m
	h.mu.Unlock()
	go func() {
		defer close(m.done)
		m.cm, m.err = h.compileFrom("stuck.wasm", pr)
	}()

	closeWithin(t, h, 30*time.Second)
	// The input ends: the compilation sees the Host closed and ends
	// without touching the closed runtime.
	if _, err := pw.Write(trapWasm); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the compilation did not end after its input did")
	}
	if !errors.Is(m.err, ErrHostClosed) {
		t.Fatalf("the stuck compilation ended with %v, want ErrHostClosed", m.err)
	}
}
