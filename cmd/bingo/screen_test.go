package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// visible is what a terminal shows once it has drawn out: each line as
// the cursor left it, \r moving to the line's start and ESC[2K erasing it
// (the only two controls bingo draws progress with).
func visible(out string) []string {
	var lines []string
	var cur []rune
	col := 0
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], "\x1b[2K"):
			cur, i = cur[:0], i+4
			continue
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines, cur, col = append(lines, string(cur)), nil, 0
		default:
			r := []rune(out[i:])[0]
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
			i += len(string(r))
			continue
		}
		i++
	}
	return append(lines, string(cur))
}

func writeSettings(t *testing.T, home, settings string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, ".bingo", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The model's text, streamed without a newline as real models do, stays on
// the screen when the tool it calls draws its progress line: the progress
// starts a line of its own and is erased alone.
func TestTextSurvivesProgressOnATerminal(t *testing.T) {
	t.Parallel()
	home, work := personal(t)
	writeSettings(t, home, `{"provider": {"plugin": "testplugin/scripted"}, "permissions": {"allow": ["plugin__testplugin__echo"]}}`)
	s := startScreen(t, home, work, filepath.Join(binDir, "bingo"), "say hi")
	if status := s.exit(30 * time.Second); status != 0 {
		t.Fatalf("exit %d; the screen:\n%q", status, s.text())
	}
	if !strings.Contains(s.text(), "\x1b[2Kplugin__testplugin__echo: echo: hi") {
		t.Fatalf("no live progress line was drawn; the screen:\n%q", s.text())
	}
	lines := visible(s.text())
	if !slices.Contains(lines, "calling echo") || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "done: ") }) {
		t.Errorf("the model's words are not all on the screen: %q (drawn: %q)", lines, s.text())
	}
}

// A tool working in silence is not taken for a hung one: on a terminal a
// live line counts its time once it has said nothing for two seconds;
// elsewhere one line says bingo is still waiting once it has run five. A
// quick call shows neither.
func TestSilentToolShowsItIsRunning(t *testing.T) {
	call := func(ms string) []string {
		return []string{filepath.Join(binDir, "bingo"), "call", "--allow", "plugin__testplugin__slow", "plugin__testplugin__slow", `{"ms":` + ms + `}`}
	}
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		home, work := personal(t)
		s := startScreen(t, home, work, call("3500")...)
		s.waitFor(0, "plugin__testplugin__slow: running… 2s", 10*time.Second)
		if status := s.exit(30 * time.Second); status != 0 {
			t.Fatalf("exit %d; the screen:\n%q", status, s.text())
		}
		if lines := visible(s.text()); slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "running…") }) {
			t.Errorf("the elapsed line outlived the call: %q", lines)
		}
	})
	for _, c := range []struct {
		name, ms string
		want     bool
	}{{"no terminal", "5600", true}, {"no terminal, quick", "300", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home, work := personal(t)
			argv := call(c.ms)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			const line = "bingo: still waiting for plugin__testplugin__slow (5s so far)…\n"
			if got := stderr.String(); (got == line) != c.want || (!c.want && got != "") {
				t.Errorf("stderr %q; want the still-waiting line: %v", got, c.want)
			}
		})
	}
}
