package exec

import (
	"bufio"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv selects what the test binary does when a test re-executes it as
// a plugin: a comma-separated list of behaviours, applied in the order
// child lists them.
const childEnv = "BINGO_EXEC_TEST_CHILD"

func TestMain(m *testing.M) {
	if modes := os.Getenv(childEnv); modes != "" {
		os.Exit(child(modes))
	}
	goleak.VerifyTestMain(m)
}

// child is the plugin the tests run. Behaviours:
//
//	ignore-term        ignore SIGTERM
//	stderr             write 1 MiB and a greeting to stderr
//	grandchild         start `sleep 1000` through sh, detached from our
//	                   stdio, in our process group; print "pid N"
//	grandchild-stderr  the same, but the sleep holds our stderr
//	escape             start `sleep 1000` in a new session (out of our
//	                   group) holding our stderr; print "pid N"
//	detach             start three `sleep 1000`s that leave us every way
//	                   they can, stdio on /dev/null: in a new session, in a
//	                   group of their own, and orphaned by a double fork;
//	                   print "pid N" for each
//	stop-parent        SIGSTOP our parent (the shepherd, if any)
//	stop-parent-always the same, every millisecond from now on
//	pwd                print the working directory and $BINGO_EXEC_TEST_VALUE
//	exit3              exit with status 3 now
//	exit               exit with status 0 now, without reading stdin
//	ready              print "ready" once set up
//	echo               copy stdin to stdout (else stdin is read and dropped)
//	hang               never read stdin; sleep forever
//	ignore-eof         after stdin's EOF, sleep forever instead of exiting
//	linger             after stdin's EOF, write "stopping" to stderr, take
//	                   a second, write "stopped", and exit
func child(modes string) int {
	has := map[string]bool{}
	for _, m := range strings.Split(modes, ",") {
		has[m] = true
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if has["ignore-term"] {
		signal.Ignore(syscall.SIGTERM)
	}
	if has["stderr"] {
		_, _ = os.Stderr.WriteString(strings.Repeat("x", 1<<20) + "\nplugin says hello\n")
	}
	if has["grandchild"] {
		fmt.Fprintf(out, "pid %d\n", shellSleep("sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"))
	}
	if has["grandchild-stderr"] {
		fmt.Fprintf(out, "pid %d\n", shellSleep("sleep 1000 </dev/null >/dev/null & echo $!"))
	}
	if has["escape"] {
		c := osexec.Command("sleep", "1000")
		c.Stderr = os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			panic(err)
		}
		fmt.Fprintf(out, "pid %d\n", c.Process.Pid)
	}
	if has["detach"] {
		for _, attr := range []*syscall.SysProcAttr{{Setsid: true}, {Setpgid: true}} {
			c := osexec.Command("sleep", "1000")
			c.SysProcAttr = attr
			if err := c.Start(); err != nil {
				panic(err)
			}
			fmt.Fprintf(out, "pid %d\n", c.Process.Pid)
		}
		fmt.Fprintf(out, "pid %d\n", shellSleep("sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"))
	}
	if has["stop-parent"] {
		_ = syscall.Kill(os.Getppid(), syscall.SIGSTOP)
	}
	if has["stop-parent-always"] {
		parent := os.Getppid()
		_ = syscall.Kill(parent, syscall.SIGSTOP)
		go func() {
			for range time.Tick(time.Millisecond) {
				_ = syscall.Kill(parent, syscall.SIGSTOP)
			}
		}()
	}
	if has["pwd"] {
		wd, _ := os.Getwd()
		fmt.Fprintf(out, "%s\n%s\n", wd, os.Getenv("BINGO_EXEC_TEST_VALUE"))
	}
	if has["exit3"] {
		out.Flush()
		return 3
	}
	if has["exit"] {
		return 0
	}
	if has["ready"] {
		fmt.Fprintln(out, "ready")
	}
	out.Flush()
	switch {
	case has["hang"]:
		sleepForever()
	case has["echo"]:
		_, _ = io.Copy(os.Stdout, os.Stdin)
	default:
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	if has["ignore-eof"] {
		sleepForever()
	}
	if has["linger"] {
		_, _ = os.Stderr.WriteString("stopping\n")
		time.Sleep(time.Second)
		_, _ = os.Stderr.WriteString("stopped\n")
	}
	return 0
}

// shellSleep runs script (which backgrounds a sleep and echoes its pid)
// with our stderr, and returns the pid.
func shellSleep(script string) int {
	c := osexec.Command("sh", "-c", script)
	c.Stderr = os.Stderr
	b, err := c.Output()
	if err != nil {
		panic(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		panic(err)
	}
	return pid
}

// sleepForever parks the child; a bare select{} would trip the runtime's
// deadlock detector.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
