package main

import (
	"net"
	"os/exec"
	"strconv"
	"testing"

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
		"listen": listen,
	}})
}

// listen VAR opens a TCP listener and a UDP socket on one loopback port,
// sets VAR to it, and keeps both until the script ends: something a probe
// reaches if the network is open to it.
func listen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: listen VAR")
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
				c.Close()
			}
		}()
		ts.Defer(func() { l.Close(); u.Close() })
		ts.Setenv(args[0], strconv.Itoa(port))
		return
	}
	ts.Fatalf("no loopback port free for both TCP and UDP")
}
