package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faultModel is a model provider that runs the calls its prompt lists, all
// in one response and in order, then answers with what each returned, one
// line each, so a test sees every tool's result in the turn's output.
const faultModel = `import json, sys
def send(m):
    sys.stdout.write(json.dumps(dict(m, jsonrpc="2.0")) + "\n")
    sys.stdout.flush()
def delta(sid, event):
    send({"method": "provider/delta", "params": {"streamId": sid, "event": event}})
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"id": mid, "result": {"protocol": 5, "name": "faultmodel", "version": "1", "providers": [{"id": "model"}]}})
    elif method == "provider/stream":
        sid, msgs = m["params"]["streamId"], m["params"]["request"]["messages"]
        if msgs[-1]["role"] == "tool":
            results = [x["content"].replace("\n", " ")[:100] for x in msgs if x["role"] == "tool"]
            delta(sid, {"kind": "text", "text": "".join("result: %s\n" % r for r in results)})
            send({"id": mid, "result": {"end": {"stopReason": "end_turn"}}})
            continue
        calls = json.loads(msgs[-1]["content"])
        for i, c in enumerate(calls):
            delta(sid, {"kind": "toolCall", "toolCall": {"index": i, "id": "c%d" % i, "name": c[0], "argumentsDelta": json.dumps(c[1])}})
        send({"id": mid, "result": {"end": {"stopReason": "tool_use"}}})
    elif mid is not None:
        send({"id": mid, "error": {"code": -32601, "message": "no " + str(method)}})
`

// faultSettings keep each row short: a tool has 3 s, a wedged instance 3
// s more (a guest busy with a big answer on a loaded machine must not pass
// for one not reading); start-up is generous, for a loaded machine.
const faultSettings = `{"provider": {"plugin": "faultmodel/model"},
 "permissions": {"allow": ["plugin__*"]},
 "deadlines": {"tool": "3s", "grace": "3s", "initialize": "30s"}}`

// hostBoundMiB is the documented bound on the host's own memory with any
// one hostile plugin at the default caps (bridge/doc.go, "Bounds"). A wasm
// plugin's memory is in the host's process, so its own cap (256 MiB by
// default) adds to what the process may hold.
const (
	hostBoundMiB = 300
	wasmCapMiB   = 256
)

// The fault matrix: one hostile behaviour of the test plugin per row, run
// through the real binary in a turn that calls the hostile tool and then
// the (Python) wordcount plugin. Every row must hold: bingo returns on its
// own; the turn goes on and wordcount answers after the fault; at most the
// stated number of notices; bingo's peak RSS under its bound; and no
// plugin process left once bingo has exited. The bridge-level rules for
// each fault are in internal/conformance, over every transport; this is
// what the person sees of them.
func TestFaultMatrix(t *testing.T) {
	for _, row := range []struct {
		name       string
		tool       string
		input      string
		maxNotices int    // bingo: lines on stderr
		says       string // a line of stdout that shows the fault was seen, if any
		exec, wasm bool
	}{
		{name: "hang", tool: "hang", input: `{}`, maxNotices: 1, says: "did not answer within 3s", exec: true, wasm: true},
		// A spinning wasm guest answers nothing else either (its Go
		// runtime has one thread): the hook and contributor asked while
		// it spins each miss their deadline, with a notice, until the
		// instance is killed as wedged.
		{name: "spin", tool: "spin", input: `{}`, maxNotices: 3, says: "did not answer within 3s", exec: true, wasm: true},
		{name: "dies mid-call", tool: "exit", input: `{}`, maxNotices: 1, says: "stopped during tool/call", exec: true, wasm: true},
		{name: "garbage on stdout", tool: "garbage", input: `{}`, maxNotices: 0, exec: true, wasm: true},
		{name: "answers twice", tool: "twice", input: `{}`, maxNotices: 0, exec: true, wasm: true},
		// A megabyte answer: past turn.compactAt, so the conversation is
		// compacted once (the test plugin's compactor is refused, with a
		// notice, for dropping the latest prompt).
		{name: "big answer", tool: "big", input: `{"bytes": 1000000}`, maxNotices: 1, exec: true, wasm: true},
		// Killed as not reading (one notice) about when the call's own
		// deadline passes: the model hears one or the other.
		{name: "requests it never reads the answers of", tool: "flood", input: `{"what": "calls", "n": 300000}`, maxNotices: 1,
			exec: true, wasm: true},
		{name: "notice flood", tool: "flood", input: `{"what": "notices", "n": 100000}`, maxNotices: 10 + 60 + 2, exec: true, wasm: true},
		{name: "over-cap stdout lines", tool: "flood", input: `{"what": "lines", "n": 3, "bytes": 100000000}`, maxNotices: 1, exec: true, wasm: true},
		{name: "input that is not an object", tool: "echo", input: `[1, 2]`, maxNotices: 0, says: "must be a JSON object", exec: true, wasm: true},
	} {
		for _, kind := range []string{"exec", "wasm"} {
			if kind == "exec" && !row.exec || kind == "wasm" && !row.wasm {
				continue
			}
			t.Run(row.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				layer := testpluginExec
				bound := hostBoundMiB
				if kind == "wasm" {
					layer, bound = testpluginWasm, hostBoundMiB+wasmCapMiB
				}
				home := faultHome(t, layer)
				prompt, _ := json.Marshal([][]any{
					{"plugin__testplugin__" + row.tool, json.RawMessage(row.input)},
					{"plugin__wordcount__count", map[string]string{"path": "notes.txt"}},
				})
				r := runBingo(t, home, "--print", string(prompt))
				if r.err != nil {
					t.Fatalf("bingo: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout, "notes.txt: 2 lines, 9 words") {
					t.Errorf("the turn did not go on to wordcount:\n%s\nstderr:\n%s", r.stdout, r.stderr)
				}
				if row.says != "" && !strings.Contains(r.stdout, row.says) {
					t.Errorf("the model was not told %q:\n%s", row.says, r.stdout)
				}
				if n := notices(r.stderr); n > row.maxNotices {
					t.Errorf("%d notices, want at most %d:\n%s", n, row.maxNotices, r.stderr)
				}
				if r.maxRSSMiB > bound {
					t.Errorf("bingo's peak RSS %d MiB is over the %d MiB bound", r.maxRSSMiB, bound)
				}
				t.Logf("peak RSS %d MiB, %d notices, %v", r.maxRSSMiB, notices(r.stderr), r.took)
				noneLeft(t, home)
			})
		}
	}
}

// faultHome is a HOME with the test plugin from layer, the Python
// wordcount, the fault model and their settings, and a work directory
// holding notes.txt.
func faultHome(t *testing.T, layer string) string {
	home := t.TempDir()
	if err := linkWasmCache(home); err != nil {
		t.Fatal(err)
	}
	plugins := filepath.Join(home, ".bingo", "plugins")
	model := filepath.Join(plugins, "faultmodel")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"cp", "-r", filepath.Join(layer, "testplugin"), filepath.Join(plugins, "testplugin")},
		{"cp", "-r", filepath.Join(examples, "wordcount"), filepath.Join(plugins, "wordcount")},
	} {
		if err := runCmd(args, nil); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{
		filepath.Join(model, "plugin.json"):            `{"name": "faultmodel", "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}}`,
		filepath.Join(model, "main.py"):                faultModel,
		filepath.Join(home, ".bingo", "settings.json"): faultSettings,
		filepath.Join(home, "work", "notes.txt"):       "the quick brown fox\njumps over the lazy dog\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

type bingoRun struct {
	stdout, stderr string
	err            error
	maxRSSMiB      int
	took           time.Duration
}

// runBingo runs bingo in home/work with HOME=home, and fails the test if
// it has not returned within two minutes.
func runBingo(t *testing.T, home string, args ...string) bingoRun {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "bingo"), args...)
	cmd.Dir = filepath.Join(home, "work")
	cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bingo did not return within two minutes; stderr:\n%s", stderr.String())
	}
	r := bingoRun{stdout: stdout.String(), stderr: stderr.String(), err: err, took: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSMiB = int(ru.Maxrss / 1024) // KiB on Linux
	}
	return r
}

// noneLeft fails the test if a process whose command line names home (every
// plugin of the row runs from home/.bingo/plugins) outlives bingo, after a
// moment for the re-parented to be reaped.
func noneLeft(t *testing.T, home string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesNaming(home)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes left behind: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesNaming lists the live (not zombie) processes whose command line
// contains s.
func processesNaming(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// notices counts bingo's notices on stderr: its lines saying "bingo: ",
// but not the ones saying it still waits for a slow call or compilation,
// which come or not with the machine's speed and report no fault.
func notices(stderr string) int {
	return strings.Count(stderr, "bingo: ") - strings.Count(stderr, "bingo: still waiting for ")
}
