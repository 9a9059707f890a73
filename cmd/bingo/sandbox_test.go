package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// What an exec plugin the person installed may reach of theirs, probed
// from inside it (testdata/sandbox/probe.py and probe.js): the same
// probes in Python and in Node.
func TestSandbox(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	testscript.Run(t, testscript.Params{Dir: "testdata/sandbox", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":    grant,
		"listen":   listen,
		"nouserns": nouserns,
	}, Condition: condition})
}

// nouserns PROGRAM [ARG...] runs a program as exec does, but in a user
// namespace whose user.max_user_namespaces is 0 (the sysctl is each user
// namespace's own): there, as on a machine that refuses user namespaces,
// bingo's plugins can have none. The script's [nouserns] says whether
// this can be done here.
func nouserns(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: nouserns PROGRAM [ARG...]")
	}
	err := ts.Exec("unshare", append(refuseUserns, args...)...)
	if err != nil && !neg {
		ts.Fatalf("%v", err)
	}
	if err == nil && neg {
		ts.Fatalf("unexpected command success")
	}
}

// refuseUserns is the unshare command line of nouserns, before the
// program's.
var refuseUserns = []string{"-Ur", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh"}

// listen VAR opens a TCP listener and a UDP socket on one loopback port,
// sets VAR to it, and keeps both until the script ends: something a probe
// reaches if the network is open to it. Each connection and datagram that
// arrives appends "tcp" or "udp" to $WORK/arrived (what a send that
// seemed to succeed but never left its namespace does not), and a
// connection is answered as an HTTP server would.
func listen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: listen VAR")
	}
	var mu sync.Mutex
	file := filepath.Join(ts.Getenv("WORK"), "arrived")
	arrived := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, what)
			f.Close()
		}
	}
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			l.Close()
			continue
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				arrived("tcp")
				go func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(5 * time.Second))
					if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
						io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
					}
				}()
			}
		}()
		go func() {
			buf := make([]byte, 64)
			for {
				if _, _, err := u.ReadFrom(buf); err != nil {
					return
				}
				arrived("udp")
			}
		}()
		ts.Defer(func() { l.Close(); u.Close() })
		ts.Setenv(args[0], strconv.Itoa(port))
		return
	}
	ts.Fatalf("no loopback port free for both TCP and UDP")
}
