package openai

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEvent caps the data of one server-sent event. Lines are not limited
// the way bufio.Scanner limits them (64 KiB), because a server may send a
// whole tool call, or a long answer, in one line; but a server that never
// ends a line must not take the host's memory with it.
const maxEvent = 32 << 20

// errEventTooLarge is returned by sseReader.next for an event over its cap.
var errEventTooLarge = errors.New("event too large")

// sseReader reads the data of server-sent events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines
// ending in "\n" or "\r\n"; "data:" lines accumulate, joined by "\n"; a blank
// line ends the event; comments (":...") and other fields (event, id, retry)
// are ignored.
type sseReader struct {
	r    *bufio.Reader
	max  int
	line []byte // the line being read, reused
	data []byte // the event being read, reused
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the data of the next event that has any. The slice is valid
// until the following call. At the clean end of the input it returns io.EOF;
// an event whose lines are complete but which has no closing blank line is
// still returned first, because some servers end the body right after
// "data: [DONE]\n". A last line cut off before its newline means the
// connection broke: io.ErrUnexpectedEOF. Any other read error is returned
// as is.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err == io.EOF {
			if has {
				return s.data, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			// A line with no colon is a field name with an empty value.
			field, value = line, nil
		}
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if len(s.data)+len(value)+1 > s.max {
			return nil, fmt.Errorf("%w: over %d bytes", errEventTooLarge, s.max)
		}
		if has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		has = true
	}
}

// readLine reads one line of any length up to the cap, without its line
// ending. It returns io.EOF only at a clean end (no bytes pending).
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(s.line)+len(frag) > s.max+2 {
			return nil, fmt.Errorf("%w: a line over %d bytes", errEventTooLarge, s.max)
		}
		s.line = append(s.line, frag...)
		switch {
		case err == nil:
			line := bytes.TrimSuffix(s.line[:len(s.line)-1], []byte("\r"))
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if len(s.line) == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
