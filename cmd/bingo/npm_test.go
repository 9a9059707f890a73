package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// npmServers is where make mcp-servers installs the official MCP servers
// (server-everything, -filesystem, -memory) and the TypeScript SDK, pinned by
// testdata/mcp-servers at the repository's root.
const npmServers = "../../.cache/mcp-servers/node_modules/@modelcontextprotocol"

// The official MCP servers from the npm registry, each run with node on
// its package's entry file, driven through the real binary. Without them
// (make mcp-servers) the test skips, except under CI, where it fails: CI
// must never pass by not running it.
func TestNPMServers(t *testing.T) {
	dir, err := filepath.Abs(npmServers)
	if err != nil {
		t.Fatal(err)
	}
	missing := func(why string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: the official MCP servers cannot be tested (make mcp-servers installs them)", why)
		}
		t.Skipf("%s: make mcp-servers installs the official MCP servers this test drives", why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not on PATH")
	}
	for _, s := range []string{"server-everything", "server-filesystem", "server-memory"} {
		if _, err := os.Stat(filepath.Join(dir, s, "dist", "index.js")); err != nil {
			missing(err.Error())
		}
	}
	// The TypeScript SDK's example server, which oauth.txtar runs with
	// --oauth.
	if _, err := os.Stat(filepath.Join(dir, "sdk", "dist", "esm", "examples", "server", "simpleStreamableHttp.js")); err != nil {
		missing(err.Error())
	}
	model, err := filepath.Abs("testdata/npmmodel")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{Dir: "testdata/npm", Setup: func(e *testscript.Env) error {
		if err := setup("wordcount")(e); err != nil {
			return err
		}
		e.Setenv("NPM_SERVERS", dir)
		e.Setenv("MODEL_SRC", model)
		return nil
	}, Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":  grant,
		"status": status, "freeport": freeport, "waitport": waitport, "waitlog": waitlog, "nonode": nonode, "signal": signal,
	}})
}

// freeport VAR sets VAR to a loopback TCP port free a moment ago, for a
// server that must be told its port.
func freeport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ts.Check(ln.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// waitport ADDR waits (up to 60s) until something accepts connections
// on ADDR.
func waitport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitport ADDR")
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", args[0], time.Second); err == nil {
			c.Close()
			return
		}
	}
	ts.Fatalf("nothing listens on %s after 60s", args[0])
}

// waitlog FILE REGEXP waits (up to 60s) until FILE has a line matching
// REGEXP: a sign that a command running in the background got that far.
func waitlog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitlog FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Logf("%s as it stands (%v):\n%s", args[0], err, b[max(0, len(b)-4096):])
	ts.Fatalf("%s: no line matching %q within 60s", args[0], args[1])
}

// signal STOP|CONT PIDFILE stops or continues the process whose pid is
// in PIDFILE: a server that stops answering anything, then answers again.
func signal(ts *testscript.TestScript, neg bool, args []string) {
	sigs := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT}
	if neg || len(args) != 2 || sigs[args[0]] == 0 {
		ts.Fatalf("usage: signal STOP|CONT PIDFILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, sigs[args[0]]))
	if args[0] == "STOP" {
		// Continued before the script's background processes are
		// interrupted at its end, however it ends: a stopped process
		// would not heed that.
		ts.Defer(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	}
}

// nonode fails if a node process working in the script's directory
// (where bingo starts its plugins) is still alive 10s on: an MCP server
// that outlived the bingo that started it.
func nonode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: nonode")
	}
	work := ts.Getenv("WORK")
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = nodesIn(work)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	ts.Fatalf("node processes outlived bingo: %s", strings.Join(left, "; "))
}

// nodesIn lists the live node processes whose working directory is dir or
// below it, each as "pid: argv".
func nodesIn(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if err != nil || filepath.Base(argv[0]) != "node" || !alive(pid) {
			continue
		}
		out = append(out, fmt.Sprintf("%d: %s", pid, strings.Join(argv, " ")))
	}
	return out
}
