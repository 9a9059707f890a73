// Package transport defines the byte pipe every plugin instance is reached
// through, whatever runs it: a subprocess (transport/exec), a WASI module in
// wazero (transport/wasm), or Go code in the test process (transport/mem).
// The bridge speaks the same line-JSON-RPC over each, with the same
// deadlines and respawn rules.
package transport

import (
	"context"
	"errors"
	"io"
	"time"
)

// Transport starts instances of one plugin. Each Start launches a fresh
// instance; the bridge calls Start again to respawn after a death. A
// Transport is safe for concurrent use.
//
// The instance's stderr goes to the writer the Transport was built with,
// never to the host's terminal.
type Transport interface {
	// Start launches one instance. ctx bounds the start only, not the
	// instance's lifetime: the instance lives until it exits or is killed.
	Start(ctx context.Context) (Conn, error)
	// Kind names the transport for people: "exec", "wasm", "mem".
	Kind() string
}

// ErrKilled is what Read and Write return once Kill has been called, in
// every transport, so a caller can tell an instance ended on purpose from
// a broken pipe without knowing what ran it.
var ErrKilled = errors.New("killed")

// Conn is one running instance.
//
// Read returns the instance's stdout (the wire in); Write goes to its stdin
// (the wire out). Read and Write may be called concurrently with each other
// and with Kill. Close closes stdin only: a well-behaved instance then
// reads EOF and exits. Kill ends the instance now, and unblocks Read and
// Write; it is idempotent. Wait returns once the instance has ended and all
// its resources are released, with why it ended (nil for a clean exit); it
// may be called more than once and from several goroutines.
type Conn interface {
	io.ReadWriteCloser
	Wait() error
	Kill() error
}

// ReadDeadliner is a Conn whose Read a deadline can interrupt, as an
// os.File's over the poller can (exec's). Over one, the bridge lets a
// caller waiting for its answer read the wire itself, waking a read
// blocked elsewhere with a deadline in the past.
type ReadDeadliner interface {
	SetReadDeadline(t time.Time) error
}
