package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// rwc reads from in and records what is written.
type rwc struct {
	in  io.Reader
	out bytes.Buffer
}

func (r *rwc) Read(p []byte) (int, error)  { return r.in.Read(p) }
func (r *rwc) Write(p []byte) (int, error) { return r.out.Write(p) }
func (*rwc) Close() error                  { return nil }

type skip struct {
	line string
	why  error
}

func read(t *testing.T, input string, max int) (got []map[string]any, skipped []skip) {
	t.Helper()
	s := NewLineStream(&rwc{in: strings.NewReader(input)}, LineStreamOptions{MaxLine: max, Skipped: func(l []byte, why error) {
		skipped = append(skipped, skip{string(l), why})
	}})
	for {
		var v map[string]any
		err := s.ReadObject(&v)
		if errors.Is(err, io.EOF) {
			return got, skipped
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
}

func TestReadSkipsWhatIsNotAMessage(t *testing.T) {
	got, skipped := read(t, "{\"a\":1}\nnot json\n\n{\"b\":2}\r\n{half\n{\"c\":3}", 0)
	if len(got) != 3 || got[0]["a"] != 1.0 || got[1]["b"] != 2.0 || got[2]["c"] != 3.0 {
		t.Fatalf("got %v", got)
	}
	if len(skipped) != 2 || skipped[0].line != "not json" || skipped[1].line != "{half" {
		t.Fatalf("skipped %v", skipped)
	}
}

func TestReadLongLines(t *testing.T) {
	long := `{"x":"` + strings.Repeat("y", 200<<10) + `"}` // past bufio's 64 KiB buffer
	got, _ := read(t, long+"\n{\"z\":1}\n", 0)
	if len(got) != 2 || len(got[0]["x"].(string)) != 200<<10 {
		t.Fatalf("a line past 64 KiB must be read whole")
	}
	got, skipped := read(t, long+"\n{\"z\":1}\n", 100<<10)
	if len(got) != 1 || got[0]["z"] != 1.0 || len(skipped) != 1 || !errors.Is(skipped[0].why, ErrLineTooLong) || len(skipped[0].line) != 512 {
		t.Fatalf("over the cap: got %v, skipped %d", got, len(skipped))
	}
}

func TestWriteIsOneLineUnescaped(t *testing.T) {
	var w rwc
	s := NewLineStream(&w, LineStreamOptions{})
	if err := s.WriteObject(map[string]string{"hint": "<path> & more"}); err != nil {
		t.Fatal(err)
	}
	if w.out.String() != "{\"hint\":\"<path> & more\"}\n" {
		t.Fatalf("wrote %q", w.out.String())
	}
}

// FuzzReadObject: whatever a plugin prints, the reader never panics, every
// object it returns is valid JSON, and it always reaches the end.
func FuzzReadObject(f *testing.F) {
	for _, seed := range []string{"{}\n", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", "garbage\n{", "\n\n\r\n", "[1,2]\n{\"a\":"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		s := NewLineStream(&rwc{in: strings.NewReader(input)}, LineStreamOptions{MaxLine: 1 << 10})
		for range len(input) + 2 {
			var v json.RawMessage
			if err := s.ReadObject(&v); err != nil {
				return
			}
			if !json.Valid(v) {
				t.Fatalf("returned invalid JSON %q", v)
			}
		}
		t.Fatal("the reader did not reach the end")
	})
}

func TestReadLine(t *testing.T) {
	var skipped []string
	s := NewLineStream(&rwc{in: strings.NewReader("one\n\n  \r\n" + strings.Repeat("x", 20) + "\ntwo\r\nthree")}, LineStreamOptions{MaxLine: 10, Skipped: func(l []byte, _ error) {
		skipped = append(skipped, string(l))
	}})
	var got []string
	for {
		line, err := s.ReadLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	// Blank lines are not lines; an over-cap one is skipped and reported;
	// the last needs no newline. A \r stays: JSON reads it as space.
	if strings.Join(got, "|") != "one|two\r|three" || len(skipped) != 1 {
		t.Errorf("lines %q, skipped %q", got, skipped)
	}
}
