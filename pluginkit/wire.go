package pluginkit

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// errShut is what a write after the instance began to end returns: nothing
// is answered once an instance is going, so a call cut short by Exit is
// never answered.
var errShut = errors.New("pluginkit: the instance is ending")

// wire is the jsonrpc2 ObjectStream the kit serves on: protocol's
// LineStream (one message per line, one Write per message) plus what Serve
// needs to end cleanly. It knows when reading has stopped, it refuses
// writes once shut, and its Close unblocks a pending read of stdin when it
// can.
type wire struct {
	ls    *protocol.LineStream
	stdin io.Reader

	// start holds reading back until Serve has wired everything a handler
	// might touch.
	start chan struct{}

	shut atomic.Bool

	readDone chan struct{} // closed once ReadObject has failed for good
	readErr  error         // why; written before readDone is closed

	closeOnce sync.Once
}

func newWire(stdin io.Reader, stdout io.Writer) *wire {
	w := &wire{stdin: stdin, start: make(chan struct{}), readDone: make(chan struct{})}
	w.ls = protocol.NewLineStream(stdio{stdin, stdout, w}, protocol.LineStreamOptions{})
	return w
}

// ReadObject implements jsonrpc2.ObjectStream. jsonrpc2 calls it from its
// one reader goroutine and stops at the first error.
func (w *wire) ReadObject(v any) error {
	<-w.start
	err := w.ls.ReadObject(v)
	if err != nil {
		w.readErr = err
		close(w.readDone)
	}
	return err
}

// WriteObject implements jsonrpc2.ObjectStream.
func (w *wire) WriteObject(v any) error {
	if w.shut.Load() {
		return errShut
	}
	return w.ls.WriteObject(v)
}

// Close implements jsonrpc2.ObjectStream.
func (w *wire) Close() error { return w.ls.Close() }

// canUnblock reports whether closing stdin ends a Read blocked on it. A
// pipe's does; an *os.File's does not (a blocking read holds the
// descriptor until it returns), and the process owning os.Stdin ends
// anyway once Serve returns.
func (w *wire) canUnblock() bool {
	_, closer := w.stdin.(io.Closer)
	_, file := w.stdin.(*os.File)
	return closer && !file
}

// closeStdin ends a read blocked on stdin, when that is possible.
func (w *wire) closeStdin() {
	w.closeOnce.Do(func() {
		if w.canUnblock() {
			w.stdin.(io.Closer).Close()
		}
	})
}

// stdio joins stdin and stdout into the ReadWriteCloser LineStream frames.
// Close closes stdin only: stdout belongs to the caller of Serve.
type stdio struct {
	io.Reader
	io.Writer
	w *wire
}

func (s stdio) Close() error {
	s.w.closeStdin()
	return nil
}
