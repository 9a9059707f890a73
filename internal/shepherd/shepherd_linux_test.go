package shepherd

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// The parent's pid is found after the last ')', whatever the process
// named itself.
func TestStatPPID(t *testing.T) {
	for stat, want := range map[string]int{
		"12 (sleep) S 34 12 12 0 -1":        34,
		"12 (a) S 99 (b) R 7) Z 56 1 1 0 0": 56,
		"12 ( ) S 1 12":                     1,
	} {
		if got, ok := statPPID([]byte(stat)); !ok || got != want {
			t.Errorf("statPPID(%q) = %d, %v; want %d", stat, got, ok, want)
		}
	}
	for _, stat := range []string{"", "12 (sleep", "12 (sleep) S", "12 (x) S -1 2"} {
		if got, ok := statPPID([]byte(stat)); ok {
			t.Errorf("statPPID(%q) = %d, want no pid", stat, got)
		}
	}
}

// Started reads the shepherd's one-line report: empty for a start, an
// errno for os/exec's error, anything else is an error of its own.
func TestStarted(t *testing.T) {
	for _, tc := range []struct {
		report string
		check  func(error) bool
	}{
		{"\n", func(err error) bool { return err == nil }},
		{"13\n", func(err error) bool {
			var pe *fs.PathError
			return errors.Is(err, fs.ErrPermission) && errors.As(err, &pe) && pe.Path == "/x" && pe.Op == "fork/exec"
		}},
		{"", func(err error) bool { return err != nil }}, // the shepherd died first
		{"13", func(err error) bool { return err != nil }},
		{"zz\n", func(err error) bool { return err != nil }},
		{string(make([]byte, 64)), func(err error) bool { return err != nil }},
	} {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		host, shep := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "shepherd")
		if _, err := shep.WriteString(tc.report); err != nil {
			t.Fatal(err)
		}
		shep.Close()
		if err := Started(host, "/x"); !tc.check(err) {
			t.Errorf("report %q: Started = %v", tc.report, err)
		}
		host.Close()
	}
}
