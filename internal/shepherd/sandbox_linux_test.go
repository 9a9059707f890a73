package shepherd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestSandboxEncodes(t *testing.T) {
	s := &Sandbox{Read: []string{"/usr", "/a b"}, Write: []string{"/w"}, List: []string{"/l"}, Network: []string{"x:1"}, Require: true}
	if got := decodeSandbox(s.encode()); !reflect.DeepEqual(got, s) {
		t.Errorf("decoded %+v, want %+v", got, s)
	}
	// A path with a line break cannot be said: it is left out, which
	// only narrows what the program reaches.
	if got := decodeSandbox((&Sandbox{Read: []string{"/a\n/", "/b"}}).encode()); !reflect.DeepEqual(got.Read, []string{"/b"}) {
		t.Errorf("decoded %q", got.Read)
	}
}

// confined runs sh -c script under a shepherd, confined to s, and returns
// its output and error.
func confined(t *testing.T, s *Sandbox, script string) (string, error) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	c, lifeline, child, err := Wrap(Command{Path: sh, Args: []string{"sh", "-c", script}, Env: os.Environ(), Sandbox: s})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.Path)
	cmd.Args, cmd.Env, cmd.ExtraFiles = c.Args, c.Env, []*os.File{child}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer lifeline.Close()
	if err := Started(lifeline, sh); err != nil {
		_ = cmd.Wait()
		return out.String(), err
	}
	err = cmd.Wait()
	return out.String(), err
}

// What a sandbox does not name is out of reach, for the program and the
// processes it starts, and what it names is not; it has no terminal, and
// TMPDIR its own.
func TestConfined(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("no Landlock here")
	}
	dir := t.TempDir()
	secret, open := filepath.Join(dir, "secret"), filepath.Join(dir, "open")
	for _, d := range []string{secret, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	system := []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"}
	s := &Sandbox{Read: append(system, open), Write: []string{"/dev/null"}}
	out, err := confined(t, s, `cat `+open+`/f && echo && ! cat `+secret+`/f 2>/dev/null && ! sh -c 'cat `+secret+`/f' 2>/dev/null && ! touch `+open+`/g 2>/dev/null && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t" && ! sh -c ': < /dev/tty' 2>/dev/null && echo done`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Fields(out)
	if len(lines) != 3 || lines[0] != "x" || lines[1] != "tmp" || lines[2] != "done" {
		t.Errorf("output %q: want the open file, TMPDIR written, and no terminal", out)
	}
	// A program the sandbox cannot execute fails Start as any other.
	if _, err := confined(t, &Sandbox{Read: []string{open}}, "true"); err == nil || !strings.Contains(err.Error(), syscall.EACCES.Error()) {
		t.Errorf("a program outside the sandbox: %v, want %v", err, syscall.EACCES)
	}
}

// A confined program's /proc is its PID namespace's: it lists its own
// processes (the stage, its init, and itself), not the test's; and the
// stage between passes its exit, or the signal that ended it, on as
// the program's.
func TestConfinedProcAndStatus(t *testing.T) {
	if LandlockABI() < 1 || userNamespaces() != "" {
		t.Skip("no Landlock or user namespaces here")
	}
	s := &Sandbox{Read: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"}, Write: []string{"/dev/null"}}
	mine := strconv.Itoa(os.Getpid())
	out, err := confined(t, s, `ls /proc; exit 3`)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit 3 came back as %v: %s", err, out)
	}
	var pids []string
	for _, name := range strings.Fields(out) {
		if _, err := strconv.Atoi(name); err == nil {
			pids = append(pids, name)
		}
	}
	if len(pids) == 0 || len(pids) > 3 || slices.Contains(pids, mine) {
		t.Errorf("the program's /proc lists %v (the test is %s): want its own few processes", pids, mine)
	}
	_, err = confined(t, s, `kill -TERM $$`)
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("a program ended by SIGTERM came back as %v", err)
	}
}
