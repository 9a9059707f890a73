package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// What a repository's wasm modules can cost bingo before they run: the
// compile bounds (docs/plugins.md, "Bounds on compiling a module"),
// measured through the binary.
func TestWasmBounds(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/bounds", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":   grant,
		"wasmgen": wasmgen,
		"bounded": bounded,
	}})
}

// wasmgen function|loops|slow N PATH writes a WASI command that is hard
// to compile: one function of N MiB (function); N MiB of functions of a
// thousand empty loops each, which the meter would grow sevenfold
// (loops); or N functions each of a thousand loops with a little code in
// each, under every cheap bound but seconds to compile (slow). The file
// is written as it is made, so that the test's own memory stays small: a
// process exec'd from it counts the test's peak as its own start.
// testscript cannot write binary files, and no committed file should be
// this large.
func wasmgen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: wasmgen function|loops|slow N PATH")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	var pattern []byte
	var reps, funcs int
	switch args[0] {
	case "function":
		pattern, reps, funcs = []byte{0x01}, n<<20, 1 // nop
	case "loops":
		pattern, reps, funcs = []byte{0x03, 0x40, 0x0b}, 1000, n<<20/3000 // loop end
	case "slow":
		pattern = []byte{0x03, 0x40}
		for range 6 {
			pattern = append(pattern, 0x41, 0x00, 0x1a) // i32.const 0, drop
		}
		pattern, reps, funcs = append(pattern, 0x0b), 1000, n
	default:
		ts.Fatalf("usage: wasmgen function|loops|slow N PATH")
	}
	path := ts.MkAbs(args[2])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	ts.Check(err)
	w := bufio.NewWriter(f)
	writeCommand(w, pattern, reps, funcs)
	ts.Check(w.Flush())
	ts.Check(f.Close())
}

// writeCommand writes a WASI command of funcs functions, all () -> (),
// each of pattern repeated reps times; the first is _start.
func writeCommand(w *bufio.Writer, pattern []byte, reps, funcs int) {
	u32 := func(b []byte, v int) []byte {
		for v >= 0x80 {
			b = append(b, byte(v)|0x80)
			v >>= 7
		}
		return append(b, byte(v))
	}
	sect := func(id byte, body []byte) []byte { return append(u32([]byte{id}, len(body)), body...) }
	w.WriteString("\x00asm\x01\x00\x00\x00")
	w.Write(sect(1, []byte{1, 0x60, 0, 0}))
	w.Write(sect(3, append(u32(nil, funcs), make([]byte, funcs)...)))
	w.Write(sect(5, []byte{1, 0, 1}))
	w.Write(sect(7, []byte{2, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0}))
	bodySize := 1 + len(pattern)*reps + 1 // no locals, the code, end
	head := u32(nil, bodySize)
	count := u32(nil, funcs)
	w.Write(u32([]byte{10}, len(count)+funcs*(len(head)+bodySize)))
	w.Write(count)
	for range funcs {
		w.Write(head)
		w.WriteByte(0)
		for range reps {
			w.Write(pattern)
		}
		w.WriteByte(0x0b)
	}
}

// bounded MIB SECONDS PROG ARGS... runs PROG as exec does and fails if it
// took longer than SECONDS of wall time, or if it or any process it waited
// for had more than MIB resident (what /usr/bin/time reports; on Linux).
func bounded(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: bounded MIB SECONDS prog args...")
	}
	mib, err := strconv.Atoi(args[0])
	ts.Check(err)
	secs, err := strconv.Atoi(args[1])
	ts.Check(err)
	prog := args[2]
	if prog == "bingo" {
		prog = filepath.Join(binDir, "bingo")
	}
	cmd := exec.Command(prog, args[3:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "NO_COLOR=1", "PWD="+cmd.Dir)
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		ts.Fatalf("%v", err)
	}
	ts.Logf("%s: %v wall", args[2], wall.Round(time.Millisecond))
	if wall > time.Duration(secs)*time.Second {
		ts.Fatalf("%s took %v, over %d s", args[2], wall.Round(time.Millisecond), secs)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && runtime.GOOS == "linux" {
		rss := ru.Maxrss >> 10 // KiB to MiB
		ts.Logf("%s: %d MiB maximum resident", args[2], rss)
		if rss > int64(mib) {
			ts.Fatalf("%s had %d MiB resident, over %d MiB", args[2], rss, mib)
		}
	}
}
