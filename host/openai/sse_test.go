package openai

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// events reads every event of input with the given cap.
func events(input string, max int, oneByte bool) ([]string, error) {
	var r io.Reader = strings.NewReader(input)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	s := newSSEReader(r, max)
	var out []string
	for {
		data, err := s.next()
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the bufio buffer
	for _, tc := range []struct {
		name, in string
		want     []string
		err      error
	}{
		{"basic", "data: a\n\ndata: b\n\n", []string{"a", "b"}, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}, io.EOF},
		{"multi-line data", "data: a\ndata: b\ndata\n\n", []string{"a\nb\n"}, io.EOF},
		{"no space", "data:a\n\ndata:  b\n\n", []string{"a", " b"}, io.EOF},
		{"comments and fields", ": hi\nevent: x\nid: 1\nretry: 5\ndata: a\n\n:\n\nevent: y\n\n", []string{"a"}, io.EOF},
		{"blank lines", "\n\n\ndata: a\n\n\n\n", []string{"a"}, io.EOF},
		{"no final blank line", "data: a\n\ndata: b\n", []string{"a", "b"}, io.EOF},
		{"cut mid-line", "data: a\n\ndata: b", []string{"a"}, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
		{"long line", "data: " + long + "\n\n", []string{long}, io.EOF},
		{"over the cap", "data: " + long + "\n\n", nil, errEventTooLarge},
		{"over the cap in pieces", "data: " + long[:100<<10] + "\ndata: " + long[:100<<10] + "\n\n", nil, errEventTooLarge},
	} {
		for _, oneByte := range []bool{false, true} {
			name := tc.name
			if oneByte {
				name += "/one byte reads"
			}
			t.Run(name, func(t *testing.T) {
				max := maxEvent
				if strings.HasPrefix(tc.name, "over the cap") {
					max = 150 << 10
				}
				got, err := events(tc.in, max, oneByte)
				if !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events, want %d", len(got), len(tc.want))
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("event %d = %.40q, want %.40q", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

func TestSSEReaderError(t *testing.T) {
	boom := errors.New("boom")
	s := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)), maxEvent)
	if d, err := s.next(); err != nil || string(d) != "a" {
		t.Fatalf("first event = %q, %v", d, err)
	}
	if _, err := s.next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: [DONE]\n\n", ": c\r\ndata:x\r\n\r\n", "data: a\ndata: b\n", "data", "\r\n\n",
		"event: e\nid: 1\ndata: {\"choices\":[]}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 64
		s := newSSEReader(bytes.NewReader(in), max)
		for range len(in) + 1 {
			data, err := s.next()
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, errEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(data) > max {
				t.Fatalf("event of %d bytes over the cap %d", len(data), max)
			}
		}
		t.Fatal("more events than input bytes")
	})
}
