package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxLine is the longest line a LineStream accepts: long enough for
// tool outputs of tens of MiB, short enough that a plugin flooding stdout
// without a newline cannot take the host's memory.
const DefaultMaxLine = 64 << 20

// LineStream frames JSON-RPC messages as one JSON value per line. It
// implements github.com/sourcegraph/jsonrpc2's ObjectStream.
//
// A line that is not a JSON-RPC message, and a line longer than the cap, is
// reported to Skipped and skipped: the connection goes on. Only the end of
// the stream (or a read error) ends ReadObject.
type LineStream struct {
	rwc     io.ReadWriteCloser
	r       *bufio.Reader
	maxLine atomic.Int64 // SetMaxLine may change it while a read is on
	defLine int          // the cap the stream was made with
	skipped func(line []byte, why error)
	take    func(line []byte) bool
	trace   func(dir string, line []byte)

	writeMu sync.Mutex
	wbuf    bytes.Buffer

	// A line that an interrupted read left half-read, for the next read
	// to go on with: its pieces so far and their length, or, past the
	// cap, its head while the rest is let go.
	pieces   [][]byte
	n        int
	skipping bool
	head     []byte
}

// LineStreamOptions configures a LineStream. The zero value is the default.
type LineStreamOptions struct {
	// MaxLine caps a line's length in bytes; 0 means DefaultMaxLine.
	MaxLine int
	// Skipped, if set, is told about every line that was skipped, with at
	// most the first 512 bytes of it.
	Skipped func(line []byte, why error)
	// Take, if set, is offered every line that is not blank, on the
	// goroutine that read it, in wire order, before ReadObject decodes it;
	// it reports whether it took the line, which ReadObject then does not
	// return. A reader that decodes some messages itself (notifications,
	// answers to its own requests) decodes them once, where a general
	// JSON-RPC decoder decodes generically first. The line is only lent.
	Take func(line []byte) bool
	// Trace, if set, is shown every line as it crosses, without its
	// newline: dir is TraceWrite for a line this stream writes, TraceRead
	// for one it reads (blank lines aside; of a line over the cap, its
	// head). The line is only lent: Trace must not keep it. It runs on the
	// writer's or the reader's goroutine, so it may be called concurrently
	// with itself. Unset, it costs nothing per line.
	Trace func(dir string, line []byte)
}

// The directions a Trace is told: from the writer's side of the stream.
const (
	TraceWrite = "->"
	TraceRead  = "<-"
)

// TraceLine writes one traced line to w, "<time> <dir> <line>" (the time
// as RFC 3339 with nanoseconds), in one Write so that lines traced from
// both directions never interleave.
func TraceLine(w io.Writer, now time.Time, dir string, line []byte) {
	b := make([]byte, 0, len(line)+48)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, dir...)
	b = append(b, ' ')
	b = append(b, line...)
	b = append(b, '\n')
	_, _ = w.Write(b)
}

// ErrLineTooLong is why a line over the cap was skipped.
var ErrLineTooLong = errors.New("line exceeds the size cap")

// NewLineStream frames messages over rwc.
func NewLineStream(rwc io.ReadWriteCloser, opts LineStreamOptions) *LineStream {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	s := &LineStream{rwc: rwc, r: bufio.NewReaderSize(rwc, 64<<10), defLine: opts.MaxLine, skipped: opts.Skipped, take: opts.Take, trace: opts.Trace}
	s.maxLine.Store(int64(opts.MaxLine))
	return s
}

// SetMaxLine caps the lines read from now on at n bytes, the line being
// read included; 0 restores the cap the stream was made with. A caller
// that expects one answer it can bound (a declaration) lowers the cap
// while it waits, so a line past that bound is let go as it arrives
// instead of being held whole.
func (s *LineStream) SetMaxLine(n int) {
	if n <= 0 {
		n = s.defLine
	}
	s.maxLine.Store(int64(n))
}

// WriteObject writes obj as one line.
func (s *LineStream) WriteObject(obj any) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.wbuf.Reset()
	if m, ok := obj.(json.Marshaler); ok {
		// A JSON-RPC library's message marshals itself; the encoder would
		// only scan its output once more to validate it.
		b, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		s.wbuf.Write(b)
		s.wbuf.WriteByte('\n')
	} else {
		enc := json.NewEncoder(&s.wbuf) // Encode appends the newline
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj); err != nil {
			return err
		}
	}
	if s.trace != nil {
		b := s.wbuf.Bytes()
		s.trace(TraceWrite, b[:len(b)-1])
	}
	_, err := s.rwc.Write(s.wbuf.Bytes())
	return err
}

// ReadObject reads the next line that decodes into v, skipping any that do
// not. v must be a pointer.
func (s *LineStream) ReadObject(v any) error {
	for {
		line, err := s.ReadLine()
		if err != nil {
			return err
		}
		if (s.take == nil || !s.take(line)) && s.Decode(line, v) {
			return nil
		}
	}
}

// Decode decodes a message line into v, a pointer, and reports true. A
// line that is not a JSON-RPC message leaves v as it was, is reported to
// Skipped, and Decode reports false.
func (s *LineStream) Decode(line []byte, v any) bool {
	fresh := reflect.New(reflect.TypeOf(v).Elem())
	if err := json.Unmarshal(line, fresh.Interface()); err != nil {
		s.skip(line, fmt.Errorf("not a JSON-RPC message: %w", err))
		return false
	}
	reflect.ValueOf(v).Elem().Set(fresh.Elem())
	return true
}

// ReadLine returns the next line that is not blank, without its newline,
// for a reader that decodes messages itself: a line over the cap is
// reported to Skipped and skipped, and Take is not consulted. The line is
// the caller's to keep. Only the end of the stream or a read error ends
// it; a read that fails for its deadline (os.ErrDeadlineExceeded) keeps
// what it had of the line for the next read, so a reader blocked in
// ReadLine may be woken by a deadline in the past and lose nothing.
func (s *LineStream) ReadLine() ([]byte, error) {
	for {
		line, err := s.readLine()
		if errors.Is(err, ErrLineTooLong) {
			s.skip(line, err)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil // an error with it comes again on the next read
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine returns the next line without its newline. A long line's
// fragments are kept as pieces of their own size and joined once (append
// would allocate several times the line on the way). A line over the cap
// is let go as it passes the cap, its rest read through the reader's
// buffer and dropped, so it costs at most the cap plus that buffer; it
// returns the head and ErrLineTooLong.
func (s *LineStream) readLine() ([]byte, error) {
	line, err := s.readRaw()
	if s.trace != nil && len(bytes.TrimSpace(line)) > 0 {
		s.trace(TraceRead, line)
	}
	return line, err
}

// readRaw is readLine, untraced. A read that fails for its deadline keeps
// what it has of the line for the next read.
func (s *LineStream) readRaw() ([]byte, error) {
	for {
		frag, err := s.r.ReadSlice('\n')
		if !s.skipping && int64(s.n+len(frag)) > s.maxLine.Load() {
			s.head, s.pieces, s.skipping = headOf(append(s.pieces, frag)), nil, true
		}
		if s.skipping {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, err
			}
			head := s.head
			s.head, s.n, s.skipping = nil, 0, false
			if err != nil {
				return head, err
			}
			return head, ErrLineTooLong
		}
		full, interrupted := errors.Is(err, bufio.ErrBufferFull), errors.Is(err, os.ErrDeadlineExceeded)
		if full || interrupted {
			if len(frag) > 0 {
				s.n += len(frag)
				s.pieces = append(s.pieces, bytes.Clone(frag))
			}
			if full {
				continue
			}
			return nil, err
		}
		line := make([]byte, 0, s.n+len(frag))
		for _, p := range s.pieces {
			line = append(line, p...)
		}
		line = append(line, frag...)
		s.pieces, s.n = nil, 0
		if err != nil {
			return line, err
		}
		return line[:len(line)-1], nil // without its '\n'
	}
}

// headOf copies the first bytes of a line held in pieces: what Skipped is
// shown of it.
func headOf(pieces [][]byte) []byte {
	var head []byte
	for _, p := range pieces {
		head = append(head, p[:min(len(p), skippedHead-len(head))]...)
		if len(head) == skippedHead {
			break
		}
	}
	return head
}

func (s *LineStream) skip(line []byte, why error) {
	if s.skipped != nil {
		s.skipped(line[:min(skippedHead, len(line))], why)
	}
}

// skippedHead is how much of a skipped line Skipped is shown.
const skippedHead = 512

// Close closes the underlying pipe.
func (s *LineStream) Close() error { return s.rwc.Close() }
