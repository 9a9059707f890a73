package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// detachPy is Python for the plugins below: detach leaves four sleeps
// behind, each detached its own way — a new session, a group of its own, a
// double fork, and a plain child in its group — with marker as their
// argument (a duration unique to the test, which finds them in /proc by
// it); sleeps counts the live ones; send writes a message.
const detachPy = `import json, os, signal, subprocess, sys, time
def detach(marker):
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.Popen(["sleep", marker], start_new_session=True, **quiet)
    subprocess.Popen(["sleep", marker], preexec_fn=os.setpgrp, **quiet)
    subprocess.Popen(["sleep", marker], **quiet)
    if os.fork() == 0:
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execvp("sleep", ["sleep", marker])
        os._exit(0)
    os.wait()
def sleeps(marker):
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            zombie = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        n += argv[:2] == [b"sleep", marker.encode()] and not zombie
    return n
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def declare(m, name, tools):
    tools = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in tools]
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocol": 5, "name": name, "version": "1", "tools": tools}})
def answer(m):
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"output": {"parts": [{"type": "text", "text": "done"}]}}})
`

// stubborn is a plugin that ignores the end of its stdin, SIGTERM and
// SIGINT, and whose tool "hang" never answers: the worst case for "no
// plugin outlives bingo". Each of its tools first detaches sleeps with
// argv[2] as their marker (which is in the plugin's argv, and its
// shepherd's, too), then writes "called" to argv[1]; the tool "answer"
// then answers.
const stubborn = detachPy + `signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
calledfile, marker = sys.argv[1:3]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        declare(m, "stubborn", ["hang", "answer"])
    elif m.get("method") == "tool/call":
        detach(marker)
        with open(calledfile + ".tmp", "w") as f:
            f.write("called")
        os.rename(calledfile + ".tmp", calledfile)
        if m["params"]["name"] == "answer":
            answer(m)
            continue
        while True:
            time.sleep(3600)
`

// No process outlives bingo, however bingo ends — it finishes, a second
// Ctrl-C, SIGTERM, SIGHUP (the terminal closed), SIGKILL — and however the
// plugin's processes detached from it.
func TestNothingOutlivesBingo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tool    string
		signals []syscall.Signal
		linux   bool // needs the shepherd
	}{
		{"normal exit", "answer", nil, true},
		{"second ctrl-c", "hang", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, true},
		{"sigterm", "hang", []syscall.Signal{syscall.SIGTERM}, true},
		{"sighup", "hang", []syscall.Signal{syscall.SIGHUP}, true},
		{"sigkill", "hang", []syscall.Signal{syscall.SIGKILL}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.linux && runtime.GOOS != "linux" {
				t.Skip("detached processes are ended by the shepherd, which is Linux's")
			}
			t.Parallel()
			home := t.TempDir()
			dir := filepath.Join(home, ".bingo", "plugins", "stubborn")
			calledFile := filepath.Join(t.TempDir(), "called")
			grantWrite(t, home, "stubborn", filepath.Dir(calledFile))
			// Seconds a sleep will not reach, and no other test's.
			marker := fmt.Sprintf("86400.%09d", time.Now().UnixNano()%1e9)
			t.Cleanup(func() {
				for _, pid := range marked(marker) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			manifest := fmt.Sprintf(`{"name": "stubborn", "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py", %q, %q]}}`, calledFile, marker)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string]string{"plugin.json": manifest, "main.py": stubborn} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tool := "plugin__stubborn__" + tc.tool
			var stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(binDir, "bingo"), "call", "--allow", tool, tool)
			cmd.Dir = home
			cmd.Env = append(os.Environ(), "HOME="+home)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if tc.signals != nil {
				// Wait until the tool is running: the plugin is started,
				// busy, and has left its sleeps.
				waitFor(t, 60*time.Second, exited, func() bool { _, err := os.Stat(calledFile); return err == nil })
				// The plugin and its four sleeps (and the shepherd).
				if n := len(marked(marker)); n < 5 {
					t.Fatalf("%d processes run, want 5 or more", n)
				}
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
			case err := <-exited:
				if tc.signals == nil && err != nil {
					t.Fatalf("bingo: %v; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("bingo did not exit; stderr:\n%s", stderr.String())
			}
			if _, err := os.Stat(calledFile); err != nil {
				t.Fatalf("the tool never ran; stderr:\n%s", stderr.String())
			}
			// Once bingo has gone, what it left would be re-parented and
			// reaped by whoever adopts it: dead or a zombie both mean gone.
			deadline := time.Now().Add(10 * time.Second)
			for len(marked(marker)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("processes %v outlived bingo; stderr:\n%s", marked(marker), stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// marked lists the live processes that have marker as an argument.
func marked(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), marker) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
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

// respawner notes in argv[1], as each instance starts, how many sleeps
// marked argv[2] are alive, and leaves four the first time its tool is
// called, noting how many then run.
const respawner = detachPy + `report, marker = sys.argv[1:3]
def note(text):
    with open(report, "a") as f:
        f.write(text + "\n")
note("start: %d left" % sleeps(marker))
spawned = False
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        declare(m, "respawner", ["spawn"])
    elif m.get("method") == "tool/call":
        if not spawned:
            detach(marker)
            spawned = True
            note("spawned: %d" % sleeps(marker))
        answer(m)
    elif "id" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
`

// An instance's end, not only bingo's, ends every process it started:
// `bingo plugins check` kills the instance and calls again, and the new
// instance finds none of what the old one left.
func TestRespawnEndsTheOldInstancesProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("detached processes are ended by the shepherd, which is Linux's")
	}
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "respawner")
	report := filepath.Join(home, "report")
	marker := fmt.Sprintf("86401.%09d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		for _, pid := range marked(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	manifest := fmt.Sprintf(`{"name": "respawner", "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py", %q, %q]}}`, report, marker)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"plugin.json": manifest, "main.py": respawner} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The check confines it as a run does: its report is granted, which
	// needs it to be there.
	if err := os.WriteFile(report, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	grantWrite(t, home, "respawner", report)
	cmd := exec.Command(filepath.Join(binDir, "bingo"), "plugins", "check", dir)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, _ := cmd.CombinedOutput() // conforming is not the point
	if !strings.Contains(string(out), "respawn: killed it; the next call") {
		t.Fatalf("the check did not respawn the plugin:\n%s", out)
	}
	notes, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	// How many of its sleeps an instance saw running when it reported
	// depends on the machine's load; that the next instance finds none
	// does not.
	if !regexp.MustCompile(`spawned: [1-9][0-9]*\nstart: 0 left\n`).Match(notes) {
		t.Fatalf("want the instance after the one that left sleeps behind to find none; notes:\n%s\ncheck:\n%s", notes, out)
	}
	if pids := marked(marker); len(pids) > 0 {
		t.Fatalf("processes %v outlived bingo", pids)
	}
}
