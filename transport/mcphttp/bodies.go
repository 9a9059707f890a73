package mcphttp

import (
	"bytes"
	"fmt"
	"io"
)

// tapped is an answer's body as the sdk reads it: an event stream's
// events each under the cap, and each message handed to the session's
// Tap, if it has one, once the sdk has read the last of its bytes: a JSON
// answer at its end, an event stream's message at the blank line that
// ends its event (the data of its data lines, as the sdk joins them; an
// event with no data, such as a stream's priming event, is none).
type tapped struct {
	rc      io.ReadCloser
	sse     bool
	tap     Tap // nil: the cap alone
	max     int // Config.MaxMessage
	c       *conn
	err     error  // an event past the cap: every later read fails so
	event   int    // event stream: the bytes of the event so far
	buf     []byte // JSON: the body so far; event stream: the line so far
	data    []byte // event stream: the event's data so far
	hasData bool
}

func (b *tapped) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if b.sse {
		if !b.scan(p[:n]) {
			// Ended here, before the sdk reads on: the session's end,
			// not the sdk's error, is what the call in flight meets.
			b.err = fmt.Errorf("the MCP server at %s sent an event of more than %d MiB, the cap on one message: refused", b.c.url, b.max>>20)
			b.c.end(b.err)
			return 0, b.err
		}
	} else if len(b.buf)+n <= b.max {
		b.buf = append(b.buf, p[:n]...)
	}
	if err == io.EOF && !b.sse && b.tap != nil && len(bytes.TrimSpace(b.buf)) > 0 {
		b.tap(false, b.buf)
		b.buf = nil
	}
	return n, err
}

// scan takes an event stream's bytes line by line (ended by LF or CRLF),
// and reports whether the event they are part of is still under the cap.
func (b *tapped) scan(p []byte) bool {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.event += len(p)
			if b.tap != nil {
				b.buf = append(b.buf, p...)
			}
			return b.event <= b.max
		}
		b.event += i + 1
		if b.event > b.max {
			return false
		}
		line := append(b.buf, p[:i]...)
		b.buf = b.buf[:0]
		p = p[i+1:]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			if b.hasData && b.tap != nil {
				b.tap(false, b.data)
			}
			b.data, b.hasData, b.event = nil, false, 0
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if b.hasData {
				b.data = append(b.data, '\n')
			}
			if b.tap != nil {
				b.data = append(b.data, v...)
			}
			b.hasData = true
		}
	}
	return true
}

func (b *tapped) Close() error { return b.rc.Close() }

// capped is an answer's body read under the cap: past it, the read fails
// and the session ends saying why, so the sdk never holds more of it.
type capped struct {
	rc        io.ReadCloser
	max, left int64
	c         *conn
	err       error // past the cap: every later read fails so
}

func (b *capped) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells a body over it
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.err = fmt.Errorf("the MCP server at %s sent an answer of more than %d MiB, the cap on one message: refused", b.c.url, b.max>>20)
		b.c.end(b.err)
		return 0, b.err
	}
	return n, err
}

func (b *capped) Close() error { return b.rc.Close() }
