package testplugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The floods are what a hostile plugin does to make the host grow without
// limit; the host's bounds are tested against them (bridge.MaxPluginRequests,
// the notice rate, the provider's cap, the line cap). Each writes its own
// lines to stdout, holding the writer so none of the kit's lines lands in
// the middle of one.

// flood is the flood tool's body.
func (st *state) flood(ctx context.Context, in struct {
	What     string
	N, Bytes int
}) (sdk.ToolOutput, error) {
	switch in.What {
	case "calls":
		// n requests whose answers are never read: stdin is not read
		// again, and the call is not answered, until the instance ends.
		if st.stdin == nil {
			return failed("flood calls needs the plugin served by Serve, whose stdin it can stop reading"), nil
		}
		st.stdin.stop()
		err := st.stdout.hold(func(w io.Writer) error {
			return writeLines(w, in.N, func(b []byte, i int) []byte {
				return fmt.Appendf(b, `{"jsonrpc":"2.0","id":"flood-%d","method":"service/call","params":{"key":"bingo.host","method":"flood"}}`, i)
			})
		})
		<-pluginkit.HostFrom(ctx).Done()
		return text("the instance ended"), err // never written
	case "notices":
		// n notices; their answers are read by the kit and dropped, as
		// answers to ids it never sent.
		err := st.stdout.hold(func(w io.Writer) error {
			return writeLines(w, in.N, func(b []byte, i int) []byte {
				return fmt.Appendf(b, `{"jsonrpc":"2.0","id":"flood-%d","method":"service/call","params":{"key":"bingo.host","method":"notice","params":{"level":"info","message":"flood %d"}}}`, i, i)
			})
		})
		if err != nil {
			return sdk.ToolOutput{}, err
		}
		return text("ok"), nil
	case "lines":
		// n lines of size bytes that are not messages, written a piece at
		// a time: the plugin holds none of them whole.
		piece := bytes.Repeat([]byte("x"), 64<<10)
		err := st.stdout.hold(func(w io.Writer) error {
			for range in.N {
				for left := in.Bytes; left > 0; left -= len(piece) {
					if _, err := w.Write(piece[:min(left, len(piece))]); err != nil {
						return err
					}
				}
				if _, err := w.Write([]byte("\n")); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return sdk.ToolOutput{}, err
		}
		return text("ok"), nil
	}
	return failed("flood: what must be calls, notices or lines, not " + in.What), nil
}

// writeLines writes n lines, line(b, i) appending the i-th (from 1) to b,
// a few dozen KiB to a Write.
func writeLines(w io.Writer, n int, line func(b []byte, i int) []byte) error {
	var b []byte
	for i := 1; i <= n; i++ {
		b = append(line(b, i), '\n')
		if len(b) >= 32<<10 || i == n {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	return nil
}

// endless is the scripted model asked "endless": it streams text without
// end, deaf to provider/cancel; only the instance's end stops it.
func endless(ctx context.Context, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	done := pluginkit.HostFrom(ctx).Done()
	delta := sdk.StreamEvent{Kind: sdk.EventText, Text: strings.Repeat("x", 4<<10)}
	for {
		select {
		case <-done:
			return sdk.StreamEnd{}, nil // never written
		default:
			emit(delta)
		}
	}
}

// valve is an instance's stdin, which the calls flood stops reading: a
// plugin that no longer reads what the host sends it. A read in progress
// when it stops still returns what it reads.
type valve struct {
	r    io.Reader
	done <-chan struct{} // the instance's end, which ends a stopped read
	shut chan struct{}
	once sync.Once
}

// closingValve is a valve over a stdin that closing unblocks (a pipe): the
// kit closes it to end a read when the instance ends. An *os.File is not
// one, as the kit knows; a valve over one is not a Closer either.
type closingValve struct {
	*valve
	io.Closer
}

// newValve wraps stdin; done is closed when the instance ends.
func newValve(stdin io.Reader, done <-chan struct{}) (io.Reader, *valve) {
	v := &valve{r: stdin, done: done, shut: make(chan struct{})}
	if c, ok := stdin.(io.Closer); ok {
		if _, file := stdin.(*os.File); !file {
			return closingValve{v, c}, v
		}
	}
	return v, v
}

func (v *valve) Read(p []byte) (int, error) {
	select {
	case <-v.shut:
		<-v.done
		return 0, io.EOF
	default:
		return v.r.Read(p)
	}
}

// stop stops reading.
func (v *valve) stop() { v.once.Do(func() { close(v.shut) }) }
