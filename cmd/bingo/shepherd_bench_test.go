package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/shepherd"
)

// BenchmarkShepherd times the life of one plugin process — start, one line
// echoed, exit on the end of stdin — started directly and under the real
// bingo binary as its shepherd, alternately in the same run: what the
// shepherd adds to every exec plugin's start and stop. cat starts as fast
// as a program can (the worst ratio); a Python plugin is the usual case.
func BenchmarkShepherd(b *testing.B) {
	if !shepherd.Available() {
		b.Skip("no shepherd here")
	}
	echo := "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
	for _, p := range []struct {
		name string
		argv []string
	}{
		{"cat", []string{"cat"}},
		{"python", []string{interpreter(b), "-c", echo}},
	} {
		b.Run(p.name, func(b *testing.B) {
			path, err := exec.LookPath(p.argv[0])
			if err != nil {
				b.Skip(err)
			}
			var took [2]time.Duration
			n := 0
			for b.Loop() {
				for i, shepherded := range []bool{false, true} {
					began := time.Now()
					echoOnce(b, path, p.argv, shepherded, nil, "ping\n", "ping\n")
					took[i] += time.Since(began)
				}
				n++
			}
			b.ReportMetric(float64(took[0].Microseconds())/float64(n), "direct-µs")
			b.ReportMetric(float64(took[1].Microseconds())/float64(n), "shepherd-µs")
			b.ReportMetric(float64(took[1])/float64(took[0]), "shepherd/direct")
		})
	}
}

// echoOnce runs the program once, under bingo as its shepherd if
// shepherded, confined to sandbox if not nil: it writes send, reads a line
// that must start with want, and closes its stdin.
func echoOnce(b *testing.B, path string, argv []string, shepherded bool, sandbox *shepherd.Sandbox, send, want string) {
	cmd := &exec.Cmd{Path: path, Args: argv}
	var lifeline *os.File
	if shepherded {
		s, l, child, err := shepherd.Wrap(shepherd.Command{Path: path, Args: argv, Sandbox: sandbox})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		defer child.Close()
		lifeline = l
		// bingo, not this test binary, as the shepherd
		cmd = &exec.Cmd{Path: filepath.Join(binDir, "bingo"), Args: s.Args, Env: s.Env, ExtraFiles: []*os.File{child}, SysProcAttr: s.Sys}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if lifeline != nil {
		if err := shepherd.Started(lifeline, path); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := stdin.Write([]byte(send)); err != nil {
		b.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, want) {
		b.Fatalf("read %q, %v", line, err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSandbox times the start of a plugin — start, its first answer,
// exit on the end of stdin — under bingo as its shepherd, unconfined and
// in the default sandbox (Landlock, a user, PID, mount and network
// namespace), alternately in the same run: a Python plugin echoing a line,
// and the official filesystem MCP server (Node) answering initialize;
// and cat, the sandbox's own cost.
// Then the call latency of one running Python plugin of each kind, a line
// there and back.
func BenchmarkSandbox(b *testing.B) {
	if !shepherd.Available() || shepherd.LandlockABI() < 1 {
		b.Skip("no sandbox here")
	}
	// BINGO_BENCH_HOST_MB gives this process, the host here, that much
	// more memory in use, as a long session has (50 MB): starting a
	// process costs a fork in proportion to it, a vfork nothing.
	if mb, _ := strconv.Atoi(os.Getenv("BINGO_BENCH_HOST_MB")); mb > 0 {
		hostMemory = make([]byte, mb<<20)
		for i := 0; i < len(hostMemory); i += 4096 {
			hostMemory[i] = 1
		}
	}
	python := interpreter(b)
	confine := func(runsFrom ...string) *shepherd.Sandbox {
		return &shepherd.Sandbox{Read: append(append([]string{}, shepherd.SystemRead...), runsFrom...), Write: shepherd.SystemWrite}
	}
	prefix := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			b.Fatal(err)
		}
		return filepath.Dir(filepath.Dir(r))
	}
	echo := "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
	type plugin struct {
		name       string
		argv       []string
		send, want string
		sandbox    *shepherd.Sandbox
	}
	plugins := []plugin{{"python", []string{python, "-c", echo}, "ping\n", "ping\n", confine(prefix(python))}}
	// cat starts as fast as a program can: what is left is the sandbox's
	// own cost.
	if cat, err := exec.LookPath("cat"); err == nil {
		plugins = append(plugins, plugin{"cat", []string{cat}, "ping\n", "ping\n", confine()})
	}
	if node, err := exec.LookPath("node"); err == nil {
		if dir, err := filepath.Abs(npmServers); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "server-filesystem", "dist", "index.js")); err == nil {
				cwd, _ := os.Getwd()
				plugins = append(plugins, plugin{"npm-filesystem", []string{node, filepath.Join(dir, "server-filesystem", "dist", "index.js"), cwd},
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n",
					`{"result":`, confine(prefix(node), filepath.Dir(filepath.Dir(dir)), cwd)})
			}
		}
	}
	for _, p := range plugins {
		b.Run("start-"+p.name, func(b *testing.B) {
			var took [2]time.Duration
			n := 0
			for b.Loop() {
				for i, sandbox := range []*shepherd.Sandbox{nil, p.sandbox} {
					began := time.Now()
					echoOnce(b, p.argv[0], p.argv, true, sandbox, p.send, p.want)
					took[i] += time.Since(began)
				}
				n++
			}
			b.ReportMetric(float64(took[0].Microseconds())/float64(n), "open-µs")
			b.ReportMetric(float64(took[1].Microseconds())/float64(n), "sandboxed-µs")
			b.ReportMetric(float64(took[1])/float64(took[0]), "sandboxed/open")
		})
	}
	b.Run("call-python", func(b *testing.B) {
		p := plugins[0]
		var conns [2]*echoConn
		for i, sandbox := range []*shepherd.Sandbox{nil, p.sandbox} {
			conns[i] = startEcho(b, p.argv, sandbox)
		}
		var took [2]time.Duration
		n := 0
		for b.Loop() {
			for i, c := range conns {
				began := time.Now()
				c.roundTrip(b)
				took[i] += time.Since(began)
			}
			n++
		}
		b.ReportMetric(float64(took[0].Nanoseconds())/float64(n)/1e3, "open-µs")
		b.ReportMetric(float64(took[1].Nanoseconds())/float64(n)/1e3, "sandboxed-µs")
		b.ReportMetric(float64(took[1])/float64(took[0]), "sandboxed/open")
	})
}

// echoConn is a running echo plugin under bingo as its shepherd.
type echoConn struct {
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// startEcho starts the echo plugin argv under bingo, confined to sandbox
// if not nil, until the benchmark ends.
func startEcho(b *testing.B, argv []string, sandbox *shepherd.Sandbox) *echoConn {
	s, l, child, err := shepherd.Wrap(shepherd.Command{Path: argv[0], Args: argv, Sandbox: sandbox})
	if err != nil {
		b.Fatal(err)
	}
	cmd := &exec.Cmd{Path: filepath.Join(binDir, "bingo"), Args: s.Args, Env: s.Env, ExtraFiles: []*os.File{child}, SysProcAttr: s.Sys}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	child.Close()
	if err := shepherd.Started(l, argv[0]); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait(); l.Close() })
	return &echoConn{stdin: stdin, stdout: bufio.NewReader(stdout)}
}

func (c *echoConn) roundTrip(b *testing.B) {
	if _, err := io.WriteString(c.stdin, "ping\n"); err != nil {
		b.Fatal(err)
	}
	if line, err := c.stdout.ReadString('\n'); err != nil || line != "ping\n" {
		b.Fatalf("read %q, %v", line, err)
	}
}

// hostMemory is BenchmarkSandbox's BINGO_BENCH_HOST_MB.
var hostMemory []byte
