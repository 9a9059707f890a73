package wasm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/transport"
)

// loopWasm is a hand-assembled WASI command that writes "started\n" to
// stderr and then loops forever (loop br 0 end) without calling the host
// again: in its start section when inStart (which runs inside
// instantiation, before Start returns), otherwise in _start (after Start
// returns, before it ever reads stdin). A Go guest can do neither: Go
// modules have no start section.
func loopWasm(inStart bool) []byte {
	// Every size here is below 128: one byte of LEB128.
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	code := []byte{
		0x00,       // no locals
		0x41, 0x02, // i32.const 2 (stderr)
		0x41, 0x00, // i32.const 0 (the iovec)
		0x41, 0x01, // i32.const 1 (one iovec)
		0x41, 0x08, // i32.const 8 (where nwritten goes)
		0x10, 0x00, // call fd_write
		0x1a,       // drop the errno
		0x03, 0x40, // loop
		0x0c, 0x00, //   br 0
		0x0b, // end
		0x0b, // end
	}
	data := cat([]byte{16, 0, 0, 0, 8, 0, 0, 0}, make([]byte, 8), []byte("started\n")) // iovec{16, 8}, nwritten, text
	b := cat(
		// magic, version
		[]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
		// types: 0 is () -> (), 1 is (i32 i32 i32 i32) -> i32
		sec(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f),
		// imports: func 0 is fd_write, of type 1
		sec(2, cat([]byte{0x01}, name("wasi_snapshot_preview1"), name("fd_write"), []byte{0x00, 0x01})...),
		// funcs: func 1 is of type 0
		sec(3, 0x01, 0x00),
		// memory: min 1 page
		sec(5, 0x01, 0x00, 0x01),
		// exports: _start is func 1, memory is memory 0
		sec(7, cat([]byte{0x02}, name("_start"), []byte{0x00, 0x01}, name("memory"), []byte{0x02, 0x00})...),
	)
	if inStart {
		b = append(b, sec(8, 0x01)...) // start: func 1
	}
	return cat(b,
		sec(10, cat([]byte{0x01, byte(len(code))}, code)...),
		sec(11, cat([]byte{0x01, 0x00, 0x41, 0x00, 0x0b, byte(len(data))}, data)...), // at offset 0
	)
}

// firstWrite is a Config.Stderr that closes seen on the guest's first
// write: the guest is running.
type firstWrite struct {
	once sync.Once
	seen chan struct{}
}

func newFirstWrite() *firstWrite { return &firstWrite{seen: make(chan struct{})} }

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.seen) })
	return len(p), nil
}

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

func writeModule(t *testing.T, name string, bin []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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

// awaitSeen waits for the guest's first write to stderr.
func awaitSeen(t *testing.T, h *Host, w *firstWrite, ch <-chan startResult) {
	t.Helper()
	select {
	case <-w.seen:
	case r := <-ch:
		t.Fatalf("Start returned %v before the guest ran", r.err)
	case <-time.After(30 * time.Second):
		closeWithin(t, h, 30*time.Second)
		t.Fatal("the guest did not start within 30s")
	}
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

// A start section that never returns runs inside instantiation, before
// Start could hand back a Conn to kill: the start's own deadline, the
// caller's context and Host.Close must each stop it.
func TestStartFunctionThatLoops(t *testing.T) {
	path := writeModule(t, "looper.wasm", loopWasm(true))

	t.Run("start deadline", func(t *testing.T) {
		h := freshHost(t)
		log := newFirstWrite()
		tr := h.Transport(Config{Path: path, Name: "looper", InstantiateTimeout: time.Second, Stderr: log})
		begin := time.Now()
		r := awaitStart(t, h, goStart(context.Background(), tr), time.Minute)
		t.Logf("Start returned after %v", time.Since(begin))
		want := "wasm plugin looper: " + path + " was still starting after 1s: its start function does not return; fix the module or remove the plugin"
		if r.err == nil || r.err.Error() != want || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("Start = %v, want %q over DeadlineExceeded", r.err, want)
		}
		select {
		case <-log.seen:
		default:
			t.Fatal("the start function never ran: the deadline cut something else short")
		}
	})

	t.Run("caller's deadline", func(t *testing.T) {
		h := freshHost(t)
		tr := h.Transport(Config{Path: path, Name: "looper", InstantiateTimeout: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := awaitStart(t, h, goStart(ctx, tr), time.Minute)
		want := "wasm plugin looper: the start of " + path + " was cut short by its caller's deadline"
		if r.err == nil || r.err.Error() != want || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("Start = %v, want %q over DeadlineExceeded", r.err, want)
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		h := freshHost(t)
		log := newFirstWrite()
		tr := h.Transport(Config{Path: path, Name: "looper", InstantiateTimeout: time.Hour, Stderr: log})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch := goStart(ctx, tr)
		awaitSeen(t, h, log, ch)
		cancel()
		r := awaitStart(t, h, ch, 30*time.Second)
		want := "wasm plugin looper: the start of " + path + " was cancelled"
		if r.err == nil || r.err.Error() != want || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Start = %v, want %q over Canceled", r.err, want)
		}
	})

	t.Run("host closes", func(t *testing.T) {
		h := freshHost(t)
		log := newFirstWrite()
		tr := h.Transport(Config{Path: path, Name: "looper", InstantiateTimeout: time.Hour, Stderr: log})
		ch := goStart(context.Background(), tr)
		awaitSeen(t, h, log, ch)
		closeWithin(t, h, 30*time.Second)
		if r := awaitStart(t, h, ch, 30*time.Second); !errors.Is(r.err, ErrHostClosed) {
			t.Fatalf("Start = %v, want ErrHostClosed", r.err)
		}
	})
}

// A _start that loops before reading stdin is past Start: Start returns
// and the caller's handshake deadline ends it with Kill, as it ends any
// spinning guest.
func TestStartThatLoopsBeforeReadingStdin(t *testing.T) {
	h := freshHost(t)
	log := newFirstWrite()
	tr := h.Transport(Config{Path: writeModule(t, "looper.wasm", loopWasm(false)), Name: "looper", Stderr: log})
	ch := goStart(context.Background(), tr)
	r := awaitStart(t, h, ch, time.Minute)
	if r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case <-log.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("_start did not run within 30s")
	}
	if _, err := io.WriteString(r.conn, "{}\n"); err != nil { // the handshake it never reads
		t.Fatal(err)
	}
	if err := r.conn.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(t, r.conn, 10*time.Second); !errors.Is(err, ErrKilled) {
		t.Fatalf("Wait = %v, want ErrKilled", err)
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
	if n := h.reads.Load(); n != 0 {
		t.Errorf("%d module files read; a refused file must not be opened", n)
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
	f := &file{done: make(chan struct{})}
	h.mu.Lock()
	h.files["stuck.wasm"] = f
	h.mu.Unlock()
	go h.loadFrom("stuck.wasm", pr, nil, f, time.Now(), DefaultBounds())

	closeWithin(t, h, 30*time.Second)
	// The input ends: the compilation sees the Host closed and ends
	// without touching the closed runtime.
	if _, err := pw.Write(trapWasm); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the load did not end after its input did")
	}
	if !errors.Is(f.err, ErrHostClosed) {
		t.Fatalf("the stuck load ended with %v, want ErrHostClosed", f.err)
	}
	if n := h.compiles.Load(); n != 0 {
		t.Fatalf("%d compilations after Close, want none", n)
	}
}
