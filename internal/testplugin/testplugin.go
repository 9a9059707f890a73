package testplugin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// Name and Version are what the plugin says it is in the handshake.
const (
	Name    = "testplugin"
	Version = "1.0.0"
)

// ExitError is how an instance asked to end by the exit tool ends: Serve
// returns it, and cmd/testplugin exits with Code. It reads like os/exec's
// exit error so the transports report the same thing.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the status the instance asked to end with.
func (e *ExitError) ExitCode() int { return e.Code }

// Serve runs one instance on the given stdio until stdin ends (nil), ctx is
// cancelled, or the exit tool ends it (an *ExitError, or nil for code 0,
// as a process exiting 0 would report). It has the shape of transport/mem's
// Main.
func Serve(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	if n, _ := strconv.Atoi(os.Getenv("TESTPLUGIN_HOLD_MIB")); n > 0 {
		held = make([]byte, n<<20)
		for i := range held {
			held[i] = 1
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("TESTPLUGIN_TOOLS")); n > 0 {
		return declareMany(stdin, stdout, n)
	}
	out := NewLockedWriter(stdout)
	in, v := newValve(stdin, ctx.Done())
	err := newPlugin(out, stderr, v).Serve(ctx, in, out)
	if ee := (*ExitError)(nil); errors.As(err, &ee) && ee.Code == 0 {
		return nil
	}
	return err
}

// held is the memory TESTPLUGIN_HOLD_MIB makes an instance write and keep
// before it answers anything.
var held []byte

// New returns the plugin. stdout is the raw stdout the misbehaving tools
// write to behind the kit's back; it must be the writer the plugin is
// served on, and a *LockedWriter (as Serve makes) so their lines never
// interleave with the kit's and twice can repeat its own answer. Any other
// writer is wrapped for the plugin's own writes, and twice then answers
// with an error saying so. stderr is the process's.
func New(stdout io.Writer) *pluginkit.Plugin { return newPlugin(stdout, os.Stderr, nil) }

// LockedWriter serialises Writes to one stdout, so the lines a plugin
// writes behind the kit's back never interleave with the kit's (each of
// which is a single Write).
type LockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	replay map[string]bool // markers of answers to write twice
}

// NewLockedWriter wraps w.
func NewLockedWriter(w io.Writer) *LockedWriter {
	return &LockedWriter{w: w, replay: map[string]bool{}}
}

// Write writes p in one Write. If p is the answer twice is waiting for,
// it then writes that answer again, and once more with an id nobody asked.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err != nil || len(l.replay) == 0 {
		return n, err
	}
	for m := range l.replay {
		if bytes.Contains(p, []byte(m)) && bytes.Contains(p, []byte(`"result"`)) {
			delete(l.replay, m)
			if _, err := l.w.Write(p); err != nil {
				return n, err
			}
			_, err = l.w.Write(withID(p, `"testplugin-unknown-id"`))
			return n, err
		}
	}
	return n, nil
}

// hold runs f with the writer to itself: what f writes is not interleaved
// with any other Write, however many Writes it takes.
func (l *LockedWriter) hold(f func(w io.Writer) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return f(l.w)
}

// expectAnswer arranges for the answer containing marker to be written
// twice more (see Write).
func (l *LockedWriter) expectAnswer(marker string) {
	l.mu.Lock()
	l.replay[marker] = true
	l.mu.Unlock()
}

// withID returns the message line with its id replaced.
func withID(line []byte, id string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	m["id"] = json.RawMessage(id)
	b, _ := json.Marshal(m)
	return append(b, '\n')
}

// declareMany answers initialize with a declaration of n trivial tools
// (m0, m1, …), as large as a hostile repository's, then reads stdin to its
// end answering nothing. It writes the answer by hand, as it goes:
// encoding hundreds of thousands of tools through the kit takes a wasm
// guest longer than a handshake's deadline, and a hostile plugin would not
// hold its declaration either.
func declareMany(stdin io.Reader, stdout io.Writer, n int) error {
	br := bufio.NewReader(stdin)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return err
	}
	var req struct{ ID json.RawMessage }
	if err := json.Unmarshal(line, &req); err != nil {
		return err
	}
	name := cmp.Or(os.Getenv("TESTPLUGIN_NAME"), Name)
	w := bufio.NewWriterSize(stdout, 64<<10)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocol":%d,"name":%q,"version":%q,"tools":[`, req.ID, protocol.Version, name, Version)
	for i := range n {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"name":"m%d","description":"","inputSchema":{"type":"object"}}`, i)
	}
	w.WriteString("]}}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, br)
	return err
}
