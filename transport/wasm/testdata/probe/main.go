//go:build wasip1

// Command probe is the test guest of transport/wasm. It reads one command
// per line on stdin and answers each with exactly one line on stdout:
//
//	echo X        X
//	read PATH     ok <quoted content> | err <message>
//	write PATH    ok | err <message>  (writes "written")
//	env           os.Environ(), each quoted, space-separated
//	cwd           <os.Getwd()>
//	dial ADDR     ok | err <message>
//	alloc         allocates without end (dies)
//	hold N        allocates N MiB more and writes it, keeps it, answers "ok"
//	spin          answers "spinning", then loops forever
//	exit N        os.Exit(N)
//	panic X       panics with X
//	rand          16 random bytes, hex
//	time          time.Now().UnixNano()
//	sleep [MS]    sleeps MS ms (10 if none), answers the measured duration in ns
//	stderr X      writes X to stderr, answers "ok"
//	args          os.Args, each quoted, space-separated
//	later X       answers X from another goroutine, after the reader has
//	              gone back to waiting for the next line
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o probe.wasm ./testdata/probe
// (TestMain does this). It avoids fmt and encoding/json to stay small: the
// tests' one cold compile is proportional to the guest's size.
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	hoard [][]byte
	sink  int
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		if cmd == "later" {
			// A guest whose reader blocks the only thread would never run
			// this goroutine: the answer proves reads wait in the poller.
			go func() {
				time.Sleep(time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				out.WriteString(arg + "\n")
				out.Flush()
			}()
			continue
		}
		mu.Lock()
		out.WriteString(answer(cmd, arg, out) + "\n")
		out.Flush()
		mu.Unlock()
	}
}

func answer(cmd, arg string, out *bufio.Writer) string {
	switch cmd {
	case "echo":
		return arg
	case "read":
		b, err := os.ReadFile(arg)
		if err != nil {
			return "err " + err.Error()
		}
		return "ok " + strconv.Quote(string(b))
	case "write":
		if err := os.WriteFile(arg, []byte("written"), 0o644); err != nil {
			return "err " + err.Error()
		}
		return "ok"
	case "env":
		return quoted(os.Environ())
	case "args":
		return quoted(os.Args)
	case "cwd":
		wd, err := os.Getwd()
		if err != nil {
			return "err " + err.Error()
		}
		return wd
	case "dial":
		c, err := net.DialTimeout("tcp", arg, time.Second)
		if err != nil {
			return "err " + err.Error()
		}
		c.Close()
		return "ok"
	case "alloc":
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			hoard = append(hoard, b)
		}
	case "hold":
		// hold N: allocate N MiB more, write every byte of it, keep it.
		n, _ := strconv.Atoi(arg)
		b := make([]byte, n<<20)
		for i := range b {
			b[i] = 1
		}
		hoard = append(hoard, b)
		return "ok"
	case "spin":
		out.WriteString("spinning\n")
		out.Flush()
		for i := 0; ; i++ {
			sink = i
		}
	case "exit":
		n, _ := strconv.Atoi(arg)
		out.Flush()
		os.Exit(n)
	case "panic":
		panic(arg)
	case "rand":
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "err " + err.Error()
		}
		return hex.EncodeToString(b)
	case "time":
		return strconv.FormatInt(time.Now().UnixNano(), 10)
	case "sleep":
		ms, err := strconv.Atoi(arg)
		if err != nil {
			ms = 10
		}
		start := time.Now()
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return strconv.FormatInt(int64(time.Since(start)), 10)
	case "stderr":
		os.Stderr.WriteString(arg + "\n")
		return "ok"
	}
	return "err unknown command " + strconv.Quote(cmd)
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}
