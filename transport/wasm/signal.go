package wasm

import (
	"bytes"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
)

// A Go guest that calls signal.Notify (as mcp-go's ServeStdio and most
// stdio servers do) starts os/signal's watcher, a goroutine that waits in
// runtime.signal_recv for a signal. On wasip1 that wait is a loop of
// sched_yield and runtime.Gosched: the goroutine is always runnable, so
// the guest's scheduler never runs out of work and never reaches
// netpoll, its only poll_oneoff on stdin (there is no sysmon on wasm; a
// garbage collection polls once, and a waiting guest does not allocate).
// A reader parked on stdin is then never woken: the guest answers what
// it read before its first wait, and nothing after.
//
// No signal ever reaches a WASI guest (the runtime's sigenable is a no-op,
// and nothing calls sigsend), so the watcher can never do anything. The
// meter gives it, by the name the Go linker writes in the name section,
// the body of an empty Go function: it returns at once, and its goroutine
// ends. signalWaitUntilIdle, which signal.Stop calls and which would wait
// for the watcher to be in signal_recv, returns at once too: no delivery
// can be in flight. The linker writes a name with each character other
// than a letter, digit, '_' or '.' as '_': os/signal.loop is
// "os_signal.loop". Both are func() in Go, (PC_B i32) → i32 in wasm; an
// empty function's body pops its return address off the Go stack (the
// SP global, the first of a Go module's) and returns 0, not unwinding.
var goSignalWatcher = func() []wasmmeter.Replacement {
	const sp = 0
	ret := []byte{
		0x00,                    // no locals
		0x23, sp, 0x41, 8, 0x6A, // SP + 8
		0x24, sp, // SP =
		0x41, 0, 0x0B, // 0, end
	}
	var r []wasmmeter.Replacement
	for _, name := range []string{signalLoop, "os_signal.signalWaitUntilIdle"} {
		r = append(r, wasmmeter.Replacement{Name: name, Params: []byte{0x7F}, Results: []byte{0x7F}, Body: ret})
	}
	return r
}()

// signalLoop is the watcher's name in the name section.
const signalLoop = "os_signal.loop"

// SignalWatcherUnstoppable reports whether bin is a Go guest whose
// os/signal watcher the host cannot stop: the watcher's name is in its
// function table (the Go runtime's, kept by -ldflags=-s) but not in a name
// section (which -s drops). Such a guest, once it waits for stdin, waits
// for ever; its author builds without -s, or calls signal.Notify only
// when runtime.GOOS is not wasip1.
func SignalWatcherUnstoppable(bin []byte) bool {
	return bytes.Contains(bin, []byte("os/signal.loop\x00")) && !wasmmeter.Named(bin, signalLoop)
}
