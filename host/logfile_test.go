package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogFileRotatesAtItsCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "plugin-x.log")
	l := NewLog(path, 100, nil)
	l.Write([]byte(strings.Repeat("a", 60) + "\n"))
	l.Write([]byte(strings.Repeat("b", 60) + "\n")) // past the cap: the first goes to .1
	l.Write([]byte(strings.Repeat("c", 500)))       // larger than the cap: its end is kept
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if string(cur) != strings.Repeat("c", 100) || string(old) != strings.Repeat("b", 60)+"\n" {
		t.Fatalf("current %q, previous %q", cur, old)
	}
	// Reopening appends: a new run does not lose the last run's log.
	l = NewLog(path, 1000, nil)
	l.Write([]byte("d\n"))
	l.Close()
	if cur, _ := os.ReadFile(path); !strings.HasSuffix(string(cur), "c\nd\n") && !strings.HasSuffix(string(cur), "cd\n") {
		t.Fatalf("reopened log = %q", cur)
	}
}

// A log is a file only once something is written to it: a run that only
// lists its plugin makes none.
func TestLogFileIsMadeByItsFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "plugin-x.log")
	l := NewLog(path, 100, nil)
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("NewLog made its directory: %v", err)
	}
	l.Write([]byte("a\n"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\n" {
		t.Fatalf("after the first write: %q %v", b, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Write([]byte("after\n")) // dropped: Close does not let a write open it again
	if b, _ := os.ReadFile(path); string(b) != "a\n" {
		t.Fatalf("a write after Close reached the file: %q", b)
	}
	never := NewLog(filepath.Join(t.TempDir(), "never.log"), 100, nil)
	if err := never.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(never.Path()); !os.IsNotExist(err) {
		t.Fatalf("a log never written was made: %v", err)
	}
}

// A log that cannot be opened costs the plugin nothing but its log: one
// report of why, then its writes are dropped, and Close says it again.
func TestALogThatCannotBeOpenedIsToldOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "logs"), nil, 0o644); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	var told []error
	var l *LogFile
	l = NewLog(filepath.Join(dir, "logs", "plugin-x.log"), 100, func(err error) {
		told = append(told, err)
		l.Write([]byte("told\n")) // as a notice that lands in this log would: not under its lock
	})
	for range 3 {
		if n, err := l.Write([]byte("lost\n")); n != 5 || err != nil {
			t.Fatalf("Write = %d, %v; want it to pretend, for the plugin's sake", n, err)
		}
	}
	if len(told) != 1 {
		t.Fatalf("told %d times: %v", len(told), told)
	}
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "plugin-x.log") {
		t.Fatalf("Close = %v", err)
	}
}

// What a plugin or server writes reaches the log escaped: an escape
// sequence, a bidi control (even one cut in two between writes) and a
// stray byte are shown, not acted on; text, tabs and newlines are kept.
func TestLogFileEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin-x.log")
	l := NewLog(path, 1000, nil)
	bidi := []byte("\u202e")
	l.Write([]byte("\x1b]0;pwned\x07title\tok\n"))
	l.Write(append([]byte("txt."), bidi[:2]...))
	l.Write(append(bidi[2:], []byte("exe \xff é\n")...))
	l.Write([]byte("end\xe2\x80"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `\x1b]0;pwned\x07title` + "\tok\n" + `txt.\u202eexe \xff é` + "\n" + `end\xe2\x80`
	if string(got) != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
}
