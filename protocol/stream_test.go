package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
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

// flood is a reader of one line of size bytes of 'x' and then the rest,
// made up as it is read, so the test itself allocates nothing for it.
type flood struct {
	size int
	rest *strings.Reader
}

func (f *flood) Read(p []byte) (int, error) {
	if f.size == 0 {
		return f.rest.Read(p)
	}
	n := min(len(p), f.size)
	for i := range p[:n] {
		p[i] = 'x'
	}
	f.size -= n
	return n, nil
}

// An over-cap line is let go as it streams past: a 200 MB line costs the
// reader at most the cap and its buffer, not the line, nor the several
// times the cap that growing one slice to the cap would allocate.
func TestOverCapLineIsNotKept(t *testing.T) {
	const size = 200 << 20
	in := &flood{size: size, rest: strings.NewReader("\n{\"next\":1}\n")}
	var skipped []skip
	s := NewLineStream(&rwc{in: in}, LineStreamOptions{Skipped: func(l []byte, why error) {
		skipped = append(skipped, skip{string(l), why})
	}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var v map[string]any
	err := s.ReadObject(&v)
	runtime.ReadMemStats(&after)
	if err != nil || v["next"] != 1.0 {
		t.Fatalf("the line after the flood: %v, %v", v, err)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0].why, ErrLineTooLong) || skipped[0].line != strings.Repeat("x", 512) {
		t.Fatalf("skipped %d lines, want the flood once with its head", len(skipped))
	}
	const bound = DefaultMaxLine + 4<<20 // the cap, the reader's buffer, and slack for the runtime
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Fatalf("reading one %d MiB line over the %d MiB cap allocated %d MiB; the bound is %d MiB",
			size>>20, DefaultMaxLine>>20, got>>20, bound>>20)
	}
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

// SetMaxLine lowers the cap for the lines read from then on, and 0 gives
// back the stream's own.
func TestSetMaxLine(t *testing.T) {
	skipped := 0
	s := NewLineStream(&rwc{in: strings.NewReader("0123456789\nabc\n")}, LineStreamOptions{MaxLine: 100, Skipped: func([]byte, error) {
		skipped++
	}})
	s.SetMaxLine(5)
	if line, err := s.ReadLine(); err != nil || string(line) != "abc" || skipped != 1 {
		t.Fatalf("under a cap of 5: skipped %d, read %q, %v", skipped, line, err)
	}
	s = NewLineStream(&rwc{in: strings.NewReader("0123456789\n")}, LineStreamOptions{MaxLine: 100})
	s.SetMaxLine(5)
	s.SetMaxLine(0)
	if line, err := s.ReadLine(); err != nil || string(line) != "0123456789" {
		t.Fatalf("with the cap restored: %q, %v", line, err)
	}
}

// Trace sees every line both ways, in order, blank lines aside; unset it
// costs a read no allocation beyond the line's own.
func TestTrace(t *testing.T) {
	var seen []string
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\nnot json\n"
	c := &rwc{in: strings.NewReader(in)}
	s := NewLineStream(c, LineStreamOptions{
		Trace:   func(dir string, line []byte) { seen = append(seen, dir+" "+string(line)) },
		Take:    func(line []byte) bool { return bytes.Contains(line, []byte(`"n"`)) },
		Skipped: func([]byte, error) {},
	})
	if err := s.WriteObject(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "m"}); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := s.ReadObject(&v); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadObject(&v); !errors.Is(err, io.EOF) {
		t.Fatalf("second read: %v", err)
	}
	want := []string{
		`-> {"id":1,"jsonrpc":"2.0","method":"m"}`,
		`<- {"jsonrpc":"2.0","id":1,"result":{}}`,
		`<- {"jsonrpc":"2.0","method":"n"}`,
		`<- not json`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("traced:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// Take is offered every line that is not blank, in wire order, before the
// general decoder; a line it takes is not returned, one it declines is.
func TestTakeTakesLinesBeforeTheDecoder(t *testing.T) {
	input := "{\"id\":\"h1\",\"result\":1}\n{\"method\":\"tool/progress\",\"params\":{}}\n\n{\"id\":7,\"result\":2}\n{\"id\":\"h2\",\"result\":3}\n"
	var offered []string
	s := NewLineStream(&rwc{in: strings.NewReader(input)}, LineStreamOptions{
		Take: func(line []byte) bool {
			offered = append(offered, string(line))
			return !bytes.Contains(line, []byte(`"id":7`))
		},
	})
	var got []string
	for {
		var v json.RawMessage
		if err := s.ReadObject(&v); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(v))
	}
	want := []string{`{"id":"h1","result":1}`, `{"method":"tool/progress","params":{}}`, `{"id":7,"result":2}`, `{"id":"h2","result":3}`}
	if strings.Join(offered, "|") != strings.Join(want, "|") {
		t.Errorf("offered %q, want %q", offered, want)
	}
	if len(got) != 1 || got[0] != `{"id":7,"result":2}` {
		t.Errorf("ReadObject returned %q, want only the declined line", got)
	}
}

// NotificationOf knows a notification by its method and missing id,
// forgives a missing "jsonrpc", and takes nothing else for one.
func TestNotificationOf(t *testing.T) {
	for _, c := range []struct {
		line, method, params string
	}{
		{`{"jsonrpc":"2.0","method":"tool/progress","params":{"n":1}}`, "tool/progress", `{"n":1}`},
		{`{"method":"provider/delta","params":[1]}`, "provider/delta", `[1]`},
		{`{"method":"plugin/declare"}`, "plugin/declare", ``},
		{`{"jsonrpc":"2.0","id":1,"method":"service/call","params":{}}`, "", ""},
		{`{"jsonrpc":"2.0","id":"h1","result":{"method":"x"}}`, "", ""},
		{`{"jsonrpc":"2.0","id":"h1","result":{}}`, "", ""},
		{`{"method":""}`, "", ""},
		{`not json "method"`, "", ""},
	} {
		method, params, ok := NotificationOf([]byte(c.line))
		if ok != (c.method != "") || method != c.method || string(params) != c.params {
			t.Errorf("%s: %q %s %v, want %q %s", c.line, method, params, ok, c.method, c.params)
		}
	}
}

// A read woken by its deadline loses nothing: what it had of a line, past
// the cap or not, is finished by the next read.
func TestReadLineInterruptedKeepsTheLine(t *testing.T) {
	for _, c := range []struct {
		name    string
		maxLine int
		want    string
	}{{"whole", 0, `{"id":1,"result":0}`}, {"over the cap", 8, `{"a":2}`}} {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			var skipped []string
			s := NewLineStream(struct {
				io.ReadCloser
				io.Writer
			}{r, io.Discard}, LineStreamOptions{MaxLine: c.maxLine, Skipped: func(line []byte, _ error) { skipped = append(skipped, string(line)) }})
			first := `{"id":1,"res`
			if c.maxLine > 0 {
				first = `{"id":1,"result":"far too long for the cap`
			}
			if _, err := w.WriteString(first); err != nil {
				t.Fatal(err)
			}
			if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if line, err := s.ReadLine(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("woken read: %q, %v; want the deadline", line, err)
			}
			if err := r.SetReadDeadline(time.Time{}); err != nil {
				t.Fatal(err)
			}
			rest := `ult":0}` + "\n"
			if c.maxLine > 0 {
				rest = `"}` + "\n" + c.want + "\n"
			}
			if _, err := w.WriteString(rest); err != nil {
				t.Fatal(err)
			}
			if line, err := s.ReadLine(); err != nil || string(line) != c.want {
				t.Fatalf("next read: %q, %v; want %s", line, err, c.want)
			}
			if c.maxLine > 0 && len(skipped) != 1 {
				t.Fatalf("skipped %q, want the over-cap line once", skipped)
			}
		})
	}
}
