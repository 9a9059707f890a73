// Package mem is the in-memory transport: each instance is a Go function
// running on its own goroutine in this process, reading its "stdin" and
// writing its "stdout" over io.Pipe pairs. It is how the bridge is tested
// fast and deterministically, with the same wire as a real process.
package mem

import (
	"context"
	"io"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/transport"
)

// Main is a plugin's body. It reads requests from stdin and writes
// messages to stdout until stdin ends or ctx is cancelled (Kill); its
// return value is the instance's exit status for Conn.Wait. Anything it
// writes to stderr goes to the transport's stderr writer.
type Main func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error

// Transport runs Main once per Start.
type Transport struct {
	main   Main
	stderr io.Writer
}

// New returns a transport whose instances run main. stderr may be nil.
func New(main Main, stderr io.Writer) *Transport {
	if stderr == nil {
		stderr = io.Discard
	}
	return &Transport{main: main, stderr: stderr}
}

var _ transport.Transport = (*Transport)(nil)

// Kind implements transport.Transport.
func (*Transport) Kind() string { return "mem" }

// ErrKilled is the Wait error of an instance ended by Kill.
var ErrKilled = transport.ErrKilled

// Start implements transport.Transport.
func (t *Transport) Start(context.Context) (transport.Conn, error) {
	inR, inW := io.Pipe()   // host writes stdin
	outR, outW := io.Pipe() // plugin writes stdout
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{in: inW, out: outR, cancel: cancel, done: make(chan struct{})}
	go func() {
		err := t.main(ctx, inR, outW, t.stderr)
		if ctx.Err() != nil && err == nil {
			err = ErrKilled
		}
		c.err = err
		// The instance is gone: its stdout ends and its stdin refuses.
		outW.CloseWithError(io.EOF)
		inR.CloseWithError(io.ErrClosedPipe)
		close(c.done)
	}()
	return c, nil
}

type conn struct {
	in       *io.PipeWriter
	out      *io.PipeReader
	cancel   context.CancelFunc
	killOnce sync.Once
	done     chan struct{}
	err      error
}

func (c *conn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *conn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c *conn) Close() error                { return c.in.Close() }

func (c *conn) Wait() error {
	<-c.done
	return c.err
}

// Kill cancels the instance's context and breaks both pipes, so a Main
// blocked on either returns.
func (c *conn) Kill() error {
	c.killOnce.Do(func() {
		c.cancel()
		c.in.CloseWithError(ErrKilled)
		c.out.CloseWithError(ErrKilled)
	})
	return nil
}
