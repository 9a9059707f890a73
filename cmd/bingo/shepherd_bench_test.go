package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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
					echoOnce(b, path, p.argv, shepherded)
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

// echoOnce runs the echoing program once, under bingo as its shepherd if
// shepherded.
func echoOnce(b *testing.B, path string, argv []string, shepherded bool) {
	cmd := &exec.Cmd{Path: path, Args: argv}
	var lifeline *os.File
	if shepherded {
		s, l, child, err := shepherd.Wrap(shepherd.Command{Path: path, Args: argv})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		defer child.Close()
		lifeline = l
		// bingo, not this test binary, as the shepherd
		cmd = &exec.Cmd{Path: filepath.Join(binDir, "bingo"), Args: s.Args, Env: s.Env, ExtraFiles: []*os.File{child}}
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
	if _, err := stdin.Write([]byte("ping\n")); err != nil {
		b.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ping\n" {
		b.Fatalf("read %q, %v", line, err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}
