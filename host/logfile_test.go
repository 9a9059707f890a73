package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogFileRotatesAtItsCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "plugin-x.log")
	l, err := OpenLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
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
	l, _ = OpenLog(path, 1000)
	l.Write([]byte("d\n"))
	l.Close()
	if cur, _ := os.ReadFile(path); !strings.HasSuffix(string(cur), "c\nd\n") && !strings.HasSuffix(string(cur), "cd\n") {
		t.Fatalf("reopened log = %q", cur)
	}
}

func TestCommandClashFirstOwnerKeepsIt(t *testing.T) {
	n := newNoticeLog()
	r := newRegistry(n.Add)
	r.AddCommand("", compactCommand{})
	r.AddCommand("plugin-a", compactCommand{}) // the host's own /compact wins
	c, _ := r.Command("compact")
	if _, ok := c.(compactCommand); !ok || !strings.Contains(n.text(), `plugin plugin-a: command "/compact" is already offered by the host, which keeps it`) {
		t.Fatalf("notices = %s", n.text())
	}
}
