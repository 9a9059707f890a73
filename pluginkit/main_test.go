package pluginkit

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain doubles as a plugin process for TestMainExits: with
// PLUGINKIT_TEST_MAIN set, the test binary runs Main instead of the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("PLUGINKIT_TEST_MAIN") {
	case "":
		goleak.VerifyTestMain(m)
	case "good":
		Main(everything(nil, echoTool()))
	case "bad":
		Main(&Plugin{})
	}
}

func TestMainExits(t *testing.T) {
	for _, c := range []struct {
		mode, stdin string
		code        int
		stdout      string
		stderr      string
	}{
		{"good", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n", 0, `"name":"kit"`, ""},
		{"good", "", 0, "", ""},
		{"bad", "", 1, "", "has no Name"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINKIT_TEST_MAIN="+c.mode)
		// The host waits for the answer before closing stdin, so the
		// test does too.
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdin.Write([]byte(c.stdin))
		var out []byte
		if c.stdout != "" {
			buf := make([]byte, 4096)
			for !strings.Contains(string(out), "\n") {
				n, err := stdout.Read(buf)
				out = append(out, buf[:n]...)
				if err != nil {
					break
				}
			}
		}
		stdin.Close()
		err := cmd.Wait()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%s with %q: exit %d, stdout %q, stderr %q", c.mode, c.stdin, code, out, stderr.String())
		}
	}
}

type codedErr struct{}

func (codedErr) Error() string { return "coded" }
func (codedErr) ExitCode() int { return 42 }

func TestExitStatus(t *testing.T) {
	var b strings.Builder
	if got := exit(nil, "p", &b); got != 0 || b.Len() != 0 {
		t.Errorf("exit(nil) = %d, %q", got, b.String())
	}
	if got := exit(errors.New("broke"), "p", &b); got != 1 || b.String() != "p: broke\n" {
		t.Errorf("exit(broke) = %d, %q", got, b.String())
	}
	if got := exit(codedErr{}, "p", &b); got != 42 {
		t.Errorf("exit with ExitCode 42 = %d", got)
	}
}
