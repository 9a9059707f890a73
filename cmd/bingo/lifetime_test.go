package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubborn is a plugin that ignores the end of its stdin, SIGTERM and
// SIGINT, and whose one tool never answers: the worst case for "no plugin
// outlives bingo". It writes its pid to argv[1] when it starts and
// "calling" to argv[2] when its tool is called.
const stubborn = `import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
def put(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
put(sys.argv[1], str(os.getpid()))
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        decl = {"protocol": 5, "name": "stubborn", "version": "1",
                "tools": [{"name": "hang", "description": "never answers", "inputSchema": {"type": "object"}}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": decl}) + "\n")
        sys.stdout.flush()
    elif m.get("method") == "tool/call":
        put(sys.argv[2], "calling")
while True:
    time.sleep(3600)
`

// No plugin outlives bingo, however bingo ends: a second Ctrl-C, SIGTERM,
// SIGHUP (the terminal closed), or SIGKILL (then the kernel's
// parent-death signal does it).
func TestNothingOutlivesBingo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []syscall.Signal
		linux   bool // needs the parent-death signal
	}{
		{"second ctrl-c", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, false},
		{"sigterm", []syscall.Signal{syscall.SIGTERM}, false},
		{"sighup", []syscall.Signal{syscall.SIGHUP}, false},
		{"sigkill", []syscall.Signal{syscall.SIGKILL}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.linux && runtime.GOOS != "linux" {
				t.Skip("the parent-death signal is Linux's")
			}
			t.Parallel()
			home := t.TempDir()
			dir := filepath.Join(home, ".bingo", "plugins", "stubborn")
			pidFile, callFile := filepath.Join(home, "pid"), filepath.Join(home, "calling")
			manifest := fmt.Sprintf(`{"name": "stubborn", "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py", %q, %q]}}`, pidFile, callFile)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string]string{"plugin.json": manifest, "main.py": stubborn} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(binDir, "bingo"), "call", "--allow", "plugin__stubborn__hang", "plugin__stubborn__hang")
			cmd.Dir = home
			cmd.Env = append(os.Environ(), "HOME="+home)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// Wait until the tool is running: the plugin is started and busy.
			waitFor(t, 60*time.Second, exited, func() bool { _, err := os.Stat(callFile); return err == nil })
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(string(data))
			if err != nil {
				t.Fatal(err)
			}
			for i, sig := range tc.signals {
				if i > 0 {
					time.Sleep(200 * time.Millisecond) // two presses, not one
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("bingo did not exit; stderr:\n%s", stderr.String())
			}
			// The plugin is bingo's child: once bingo has gone it is
			// re-parented, and reaped by whoever adopts it. Dead or a
			// zombie both mean gone.
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("plugin %d outlived bingo; stderr:\n%s", pid, stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// waitFor polls cond until it holds; bingo ending first, or the timeout,
// fails the test.
func waitFor(t *testing.T, timeout time.Duration, exited <-chan error, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("bingo ended early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS != "linux" // no /proc: trust kill(2)
	}
	// The state follows the parenthesised command name.
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
