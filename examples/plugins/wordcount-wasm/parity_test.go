//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.uber.org/goleak"
)

// These tests hold the examples to one contract: the same transcript goes
// to main.py (a python3 subprocess), to this plugin served by pluginkit in
// process, and to the wasip1 build of this package (in wazero, sandboxed
// as the host runs it), and every one must give the same answers.
//
// "The same" (sameAnswers) is what a host can tell apart: the same
// requests answered and the same left unanswered; each answer the same
// JSON value, result or error, its code and its message, member by member;
// the same progress lines, each before its own call's answer. Not compared:
// the bytes that spell a value (pluginkit writes members in the order the
// host's JSON-RPC library does and escapes <, > and & as \u003c, \u003e
// and \u0026; main.py writes them as typed), and the order of answers to
// different requests (pluginkit runs requests concurrently; JSON-RPC
// pairs an answer with its request by id), and the name in the handshake,
// each build's own (asPython). The Node example, written to main.py's
// bytes, is still held to them byte for byte.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// watchdog bounds a test's waiting on a plugin: if the plugin hangs, kill
// runs and the blocked read fails, instead of the test hanging.
const watchdog = 20 * time.Second

// pyMain is the Python example, beside this one.
var pyMain = filepath.Join("..", "wordcount", "main.py")

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// fixture writes the files the transcript asks about into a fresh
// directory and returns it.
func fixture(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"notes.txt":  "the quick brown fox\njumps over the lazy dog\n",
		"utf8.txt":   "héllo wörld — ünïcode €\nbad byte: \xff, cut: \xe2\x82\nno newline",
		"empty.txt":  "",
		".hidden":    "secret\n",
		"sub/a.txt":  "a\n",
		"sub/.b.txt": "b\n",
		"nothing.md": "x",
		// The six ASCII separators, and two that only look like spaces.
		"spaces.txt": "a b\tc\nd\re\vf\fg\x1ch\u00a0i",
		// Names that test string escaping: HTML characters (never escaped),
		// a control byte, U+2028, and a byte that is not UTF-8 (it goes
		// out as \ufffd).
		"we<i>rd & co.txt":     "1 2 3",
		"ctl\x01\u2028.txt":    "x",
		"bad\xffname.txt":      "x",
		"sub/deeper/notes.txt": "deep\n",
	}
	for name, data := range files {
		write(t, filepath.Join(dir, name), data)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// transcript is the conversation every implementation gets, one request
// per line, for a fixture in dir.
func transcript(dir string) []string {
	tool := func(id any, input string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tool/call","params":{"callId":%s,"name":"count","input":%s,"cwd":%s,"session":"s","turn":1}}`, id, q(fmt.Sprint("c", id)), input, q(dir))
	}
	run := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"command/run","params":{"name":"wordcount","args":%s,"cwd":%s,"session":"s"}}`, id, q(args), q(dir))
	}
	comp := func(id int, partial string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"command/complete","params":{"name":"wordcount","partial":%s,"cwd":%s}}`, id, q(partial), q(dir))
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":"early","method":"command/complete","params":{"name":"wordcount","partial":"","cwd":` + q(dir) + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":5,"pluginRoot":"/p","config":null,"env":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocol":4}}`,
		tool(3, `{"path":"notes.txt"}`),
		tool(4, `{"path":"utf8.txt"}`),
		tool(5, `{"path":"empty.txt"}`),
		tool(6, `{"path":"sub"}`),
		tool(7, `{"path":"missing.txt"}`),
		tool(8, `{"path":"notes.txt/inside"}`),
		tool(9, `{"path":"fifo"}`),
		tool(10, `{"path":`+q(filepath.Join(dir, "notes.txt"))+`}`),
		tool(11, `{"path":"sub/deeper/notes.txt"}`),
		tool(12, `{"path":"we<i>rd & co.txt"}`),
		tool(13, `{}`),
		tool(14, `{"path":""}`),
		tool(15, `{"path":5}`),
		tool(16, `null`),
		tool(`"str\u0069ng-id"`, `{"path":"notes.txt"}`),
		tool(18, `{"path":"spaces.txt"}`),
		`{"jsonrpc":"2.0","id":17,"method":"tool/call","params":{"callId":"c17","name":"nope","input":{},"cwd":"/"}}`,
		`{"jsonrpc":"2.0","method":"tool/cancel","params":{"callId":"c3"}}`,
		run(20, "notes.txt"),
		run(21, "  \tnotes.txt \n"),
		run(22, ""),
		run(23, " \t "),
		run(24, "missing.txt"),
		run(25, "sub"),
		run(26, "utf8.txt"),
		`{"jsonrpc":"2.0","id":27,"method":"command/run","params":{"name":"nope","args":"x","cwd":"/"}}`,
		comp(30, ""),
		comp(31, "no"),
		comp(32, "."),
		comp(33, "sub/"),
		comp(34, "sub/."),
		comp(35, "missing/"),
		comp(36, "zzz"),
		comp(37, "we"),
		comp(38, dir+"/su"),
		comp(39, "ctl"),
		comp(40, "bad"),
		`{"jsonrpc":"2.0","id":41,"method":"hook/decide","params":{}}`,
		`{"jsonrpc":"2.0","id":42,"method":"command/run","params":{"name":"wordcount","args":5,"cwd":"/"}}`,
		`{"jsonrpc":"2.0","id":43,"method":"command/complete","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":44,"method":"command/run"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":45,\"method\":\"command/run\",\"params\":{\"name\":\"wordcount\",\"args\":\"x\xffy\",\"cwd\":\"/\"}}",
		`{"jsonrpc":"2.0","id":46,"method":"command/run","params":{"name":"wordcount","args":"\ud800\u2029","cwd":"/"}}`,
		// Numbers strtod takes and JSON does not: each line is not JSON.
		`{"jsonrpc":"2.0","id":47,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":-inf}}`,
		`{"jsonrpc":"2.0","id":48,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":0x10}}`,
		`{"jsonrpc":"2.0","id":49,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":01}}`,
		`{"jsonrpc":"2.0","id":50,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":1.}}`,
		`{"jsonrpc":"2.0","id":51,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":-}}`,
		`{"jsonrpc":"2.0","id":52,"method":"command/run","params":{"name":"wordcount","args":"notes.txt","n":-0.5e+3,"cwd":` + q(dir) + `}}`,
		`{"jsonrpc":"2.0","id":null,"method":"command/run","params":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"command/run","params":{}}`,
		`{"jsonrpc":"2.0","id":true,"method":"command/run","params":{}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`not json at all`,
		`[1,2,3]`,
		``,
		`   `,
		`{"jsonrpc":"2.0","id":99,"method":"command/complete","params":{"name":"wordcount","partial":"empty","cwd":` + q(dir) + `}}`,
	}
	return lines
}

// q is s as a JSON string.
func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// runPython feeds input to main.py and returns its stdout and stderr.
func runPython(t *testing.T, input string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", pyMain)
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 main.py: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

// runGo serves this plugin with pluginkit in process, feeds it input, and
// returns its stdout and its log once it has written answers answers (see
// converse).
func runGo(t *testing.T, input string, answers int) (stdout, log string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var logb bytes.Buffer // written by the plugin, read once Serve has returned
	done := make(chan error, 1)
	go func() {
		err := newPlugin(&logb).Serve(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	timer := time.AfterFunc(watchdog, func() { inR.CloseWithError(errors.New("watchdog: the plugin did not answer in time")) })
	defer timer.Stop()
	stdout = converse(t, inW, outR, input, answers)
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	return stdout, logb.String()
}

// converse writes input to a plugin's stdin and reads its stdout until it
// has written answers answers; then it closes stdin, as the host does when
// it is done, and reads on until stdout ends. pluginkit writes nothing
// once stdin has ended (the host has gone), so a transcript written and
// closed at once would lose the answers still running.
func converse(t *testing.T, stdin io.WriteCloser, stdout io.Reader, input string, answers int) string {
	t.Helper()
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(stdin, input)
		wrote <- err
	}()
	closeStdin := func() {
		if err := <-wrote; err != nil {
			t.Errorf("writing the transcript: %v", err)
		}
		stdin.Close()
	}
	var out strings.Builder
	r := bufio.NewReader(stdout)
	seen := 0
	for {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if isAnswer(line) {
			if seen++; seen == answers {
				closeStdin()
			}
		}
		if err != nil {
			break // the plugin has ended (or the watchdog broke the pipe)
		}
	}
	if seen < answers {
		closeStdin()
		t.Errorf("stdout ended after %d answers, want %d", seen, answers)
	}
	return out.String()
}

// isAnswer reports whether line is an answer: an id and no method.
func isAnswer(line string) bool {
	var m struct {
		ID     json.RawMessage
		Method *string
	}
	return json.Unmarshal([]byte(line), &m) == nil && m.ID != nil && m.Method == nil
}

// countAnswers counts the answers in out.
func countAnswers(out string) int {
	n := 0
	for l := range strings.Lines(out) {
		if isAnswer(l) {
			n++
		}
	}
	return n
}

// buildWasm builds this package for wasip1 once per test binary run.
func buildWasm(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go build: %v\n%s", err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// runWasm runs the wasip1 build in wazero the way the host's sandbox does:
// dir mounted read-only at its own path, nothing else of the file system,
// no environment, stdin an OS pipe and stdout an io.Pipe. wazero lets a Go
// guest poll the pipe, so it answers on one goroutine while it reads on
// another, as in transport/wasm (whose stdin is a buffer the meter's shim
// makes pollable the same way). It converses until answers answers are
// out.
func runWasm(t *testing.T, wasm []byte, dir, input string, answers int) (stdout, stderr string) {
	t.Helper()
	rt := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer rt.Close(context.Background())
	wasi_snapshot_preview1.MustInstantiate(context.Background(), rt)
	start := time.Now()
	compiled, err := rt.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compiled in %v", time.Since(start))
	// The watchdog covers the run only: compiling is slow under -race.
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithStdin(inR).WithStdout(outW).WithStderr(&errb).
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(dir, dir)).
		WithArgs("wordcount")
	// A guest stuck in a host call (say, opening a FIFO) ignores ctx, so
	// the watchdog also stops waiting for it: the test fails instead of
	// hanging.
	type result struct {
		mod api.Module
		err error
	}
	done := make(chan result, 1)
	start = time.Now()
	go func() {
		mod, err := rt.InstantiateModule(ctx, compiled, cfg)
		outW.Close()
		done <- result{mod, err}
	}()
	timer := time.AfterFunc(watchdog, func() { outR.CloseWithError(errors.New("watchdog: the plugin did not answer in time")) })
	defer timer.Stop()
	out := converse(t, inW, outR, input, answers)
	var r result
	select {
	case r = <-done:
	case <-time.After(watchdog + 5*time.Second):
		t.Fatalf("the wasm plugin did not end within %v", watchdog)
	}
	t.Logf("ran in %v", time.Since(start))
	if r.err != nil {
		t.Fatalf("wasm: %v\n%s", r.err, errb.String())
	}
	r.mod.Close(ctx)
	return out, errb.String()
}

// ownName is the name each build gives: its directory's, as the host
// wants, where main.py's is "wordcount". It starts the build's messages
// and is in its handshake, and it is the one thing in which the answers
// differ.
var ownName = map[string]string{"go": "wordcount-wasm", "wasm": "wordcount-wasm", "node": "wordcount-node", "c": "wordcount-c"}

// asPython is a build's output with its own name put back to main.py's;
// it fails t if the handshake does not carry that name.
func asPython(t *testing.T, who, out string) string {
	t.Helper()
	if !strings.Contains(out, fmt.Sprintf(`"name":%q`, ownName[who])) {
		t.Errorf("%s does not name itself %s in its handshake:\n%s", who, ownName[who], out)
	}
	return strings.ReplaceAll(out, ownName[who], "wordcount")
}

// sameLines fails t at the first line where got and want differ: for the
// Node example, held to main.py's bytes (but its name).
func sameLines(t *testing.T, gotName, got, wantName, want string) {
	t.Helper()
	got = asPython(t, gotName, got)
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("line %d differs:\n%s: %s\n%s: %s", i+1, gotName, gl, wantName, wl)
		}
	}
}

// replies is what a plugin wrote, as a host tells it apart: each answer
// by its id, and the notifications in the order written, every message as
// canonical JSON (decoded and encoded again: members sorted, one spelling
// per value, numbers as written).
type replies struct {
	answers map[string]string // id → the answer
	at      map[string]int    // id → the line it is on
	notes   []note
}

type note struct {
	line   int
	msg    string
	callID string // a tool/progress's callId, as canonical JSON
}

// canonical is raw decoded and encoded again, or ok false if it is not
// JSON.
func canonical(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return "", false
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

func parseReplies(t *testing.T, name, out string) replies {
	t.Helper()
	r := replies{answers: map[string]string{}, at: map[string]int{}}
	i := 0
	for line := range strings.Lines(out) {
		i++
		msg, ok := canonical([]byte(line))
		var m struct {
			ID     json.RawMessage
			Method *string
			Params struct{ CallID json.RawMessage }
		}
		if !ok || json.Unmarshal([]byte(line), &m) != nil {
			t.Errorf("%s line %d is not a JSON object: %s", name, i, line)
			continue
		}
		if m.Method != nil {
			id, _ := canonical(m.Params.CallID)
			r.notes = append(r.notes, note{i, msg, id})
			continue
		}
		id, _ := canonical(m.ID)
		if _, dup := r.answers[id]; dup {
			t.Errorf("%s answered id %s twice", name, id)
		}
		r.answers[id], r.at[id] = msg, i
	}
	return r
}

// sameAnswers fails t unless got and want are the same answers to input
// (see the top of this file for what "the same" is), got's name aside.
func sameAnswers(t *testing.T, gotName, got, wantName, want, input string) {
	t.Helper()
	got = asPython(t, gotName, got)
	g, w := parseReplies(t, gotName, got), parseReplies(t, wantName, want)
	for _, id := range slices.Sorted(maps.Keys(w.answers)) {
		switch ga, ok := g.answers[id]; {
		case !ok:
			t.Errorf("id %s: %s did not answer; %s answered\n%s", id, gotName, wantName, w.answers[id])
		case ga != w.answers[id]:
			t.Errorf("id %s: %s answered\n%s\n%s answered\n%s", id, gotName, ga, wantName, w.answers[id])
		}
	}
	for id, ga := range g.answers {
		if _, ok := w.answers[id]; !ok {
			t.Errorf("id %s: %s answered\n%s\nwhich %s left unanswered", id, gotName, ga, wantName)
		}
	}
	notes := func(r replies) []string {
		var s []string
		for _, n := range r.notes {
			s = append(s, n.msg)
		}
		slices.Sort(s)
		return s
	}
	if gn, wn := notes(g), notes(w); !slices.Equal(gn, wn) {
		t.Errorf("notifications differ:\n%s:\n%s\n%s:\n%s", gotName, strings.Join(gn, "\n"), wantName, strings.Join(wn, "\n"))
	}
	// A progress line belongs to a running call: it comes before its
	// call's answer.
	call := callIDs(input)
	for _, side := range []struct {
		name string
		r    replies
	}{{gotName, g}, {wantName, w}} {
		for _, n := range side.r.notes {
			id, ok := call[n.callID]
			if at, answered := side.r.at[id]; n.callID != "" && (!ok || !answered || at < n.line) {
				t.Errorf("%s line %d is not followed by its call's answer: %s", side.name, n.line, n.msg)
			}
		}
	}
}

// callIDs maps each tool call's callId in input to its request's id, both
// as canonical JSON.
func callIDs(input string) map[string]string {
	ids := map[string]string{}
	for line := range strings.Lines(input) {
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct{ CallID json.RawMessage }
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Method != "tool/call" || m.ID == nil {
			continue
		}
		callID, _ := canonical(m.Params.CallID)
		id, _ := canonical(m.ID)
		ids[callID] = id
	}
	return ids
}

// takeAnswer takes the answer to id (as JSON) out of out.
func takeAnswer(t *testing.T, out, id string) (answer, rest string) {
	t.Helper()
	for line := range strings.Lines(out) {
		var m struct{ ID json.RawMessage }
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == id && isAnswer(line) {
			answer = line
		} else {
			rest += line
		}
	}
	if answer == "" {
		t.Errorf("no answer to id %s in\n%s", id, out)
	}
	return answer, rest
}

// sameValue fails t unless got and want are the same JSON value.
func sameValue(t *testing.T, what, got, want string) {
	t.Helper()
	g, gok := canonical([]byte(got))
	w, wok := canonical([]byte(want))
	if !gok || !wok || g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// handshake is the initialize a test sends first when the transcript is
// not the point: pluginkit refuses a request before it, and main.py too.
const handshake = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocol":5}}` + "\n"

func TestParityPythonAndGo(t *testing.T) {
	needPython(t)
	dir := fixture(t)
	input := strings.Join(transcript(dir), "\n") + "\n"
	py, pyErr := runPython(t, input)
	gt, _ := runGo(t, input, countAnswers(py))
	sameAnswers(t, "go", gt, "python", py, input)
	checkAnswers(t, dir, py)
	// The Go build's start line is its main's (TestParityWasm); pluginkit
	// skips a line that is not JSON without a word.
	if !strings.HasPrefix(pyErr, "wordcount: started (protocol 5)\n") {
		t.Errorf("python stderr does not start with the start line:\n%s", pyErr)
	}
	if !strings.Contains(pyErr, "wordcount: skipped a line that is not") {
		t.Errorf("python did not log the line that is not JSON:\n%s", pyErr)
	}
}

// TestOtherProtocol: asked for a protocol it does not speak, the plugin
// answers the one it does, and says so in its log.
func TestOtherProtocol(t *testing.T) {
	needPython(t)
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":4}}` + "\n"
	py, pyErr := runPython(t, in)
	gt, goErr := runGo(t, in, 1)
	sameAnswers(t, "go", gt, "python", py, in)
	if !strings.HasPrefix(py, `{"jsonrpc":"2.0","id":1,"result":{"protocol":5,`) {
		t.Errorf("python's handshake: %s", py)
	}
	for name, log := range map[string]string{"wordcount": pyErr, ownName["go"]: goErr} {
		if !strings.Contains(log, name+": host asked for protocol 4; answering 5\n") {
			t.Errorf("%s did not log the protocol it was asked for:\n%s", name, log)
		}
	}
}

// TestParityNode holds the Node example (../wordcount-node/main.js) to the
// same bytes as main.py.
func TestParityNode(t *testing.T) {
	needPython(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the Node example is not tested")
	}
	dir := fixture(t)
	input := strings.Join(transcript(dir), "\n") + "\n"
	py, _ := runPython(t, input)
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("..", "wordcount-node", "main.js"))
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node main.js: %v\n%s", err, errb.String())
	}
	sameLines(t, "node", out.String(), "python", py)
	if !strings.HasPrefix(errb.String(), "wordcount-node: started (protocol 5)\n") {
		t.Errorf("node stderr does not start with the start line:\n%s", errb.String())
	}
}

func TestParityWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the wasm module")
	}
	needPython(t)
	parityWasm(t, "wasm", buildWasm(t))
}

// TestParityC holds the C example (../wordcount-c, built with clang and
// wasi-libc as its build.sh does) to main.py's answers, run as the Go
// build is.
func TestParityC(t *testing.T) {
	needPython(t)
	parityWasm(t, "c", buildC(t))
}

// buildC builds ../wordcount-c with its build.sh into a temporary
// directory. Without clang and wasi-libc the test skips, except under CI,
// which installs them (.ci/run).
func buildC(t *testing.T) []byte {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("..", "wordcount-c"))
	dir := t.TempDir()
	for _, f := range []string{"build.sh", "main.c", "json.c", "json.h"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f), string(b))
	}
	if _, err := exec.LookPath("clang"); err != nil && os.Getenv("CI") == "" {
		t.Skip("no clang: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32")
	}
	if out, err := exec.Command("sh", filepath.Join(dir, "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "plugin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// parityWasm runs the transcript through the module wasm, the build who,
// and holds its answers to main.py's.
func parityWasm(t *testing.T, who string, wasm []byte) {
	dir := fixture(t)
	input := strings.Join(transcript(dir), "\n") + "\n"
	py, _ := runPython(t, input)
	// One more request for the wasm build alone: a path outside the one
	// directory the sandbox mounts does not exist for the guest.
	outside := `{"jsonrpc":"2.0","id":"outside","method":"command/run","params":{"name":"wordcount","args":"/etc/hosts","cwd":` + q(dir) + `}}`
	wt, wErr := runWasm(t, wasm, dir, input+outside+"\n", countAnswers(py)+1)
	got, rest := takeAnswer(t, wt, `"outside"`)
	sameAnswers(t, who, rest, "python", py, input)
	sameValue(t, "outside the sandbox", got, `{"jsonrpc":"2.0","id":"outside","result":{"outcome":{"kind":"error","message":"`+ownName[who]+`: cannot read /etc/hosts: no such file or directory"}}}`)
	if !strings.HasPrefix(wErr, ownName[who]+": started (protocol 5)\n") {
		t.Errorf("%s stderr does not start with the start line:\n%s", who, wErr)
	}
}

// TestNotRegularDevice: a device is refused by kind, natively in both
// languages.
func TestNotRegularDevice(t *testing.T) {
	needPython(t)
	in := handshake + `{"jsonrpc":"2.0","id":1,"method":"command/run","params":{"name":"wordcount","args":"/dev/null","cwd":"/"}}` + "\n"
	want := `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"error","message":"wordcount: cannot read /dev/null: not a regular file"}}}` + "\n"
	py, _ := runPython(t, in)
	gt, _ := runGo(t, in, 2)
	sameAnswers(t, "go", gt, "python", py, in)
	if got, _ := takeAnswer(t, py, "1"); got != want {
		t.Errorf("python:\n got %s\nwant %s", got, want)
	}
}

// TestPermissionDenied needs a user the file system refuses.
func TestPermissionDenied(t *testing.T) {
	needPython(t)
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "secret.txt"), "x")
	if err := os.Chmod(filepath.Join(dir, "secret.txt"), 0); err != nil {
		t.Fatal(err)
	}
	in := handshake + fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"command/run","params":{"name":"wordcount","args":"secret.txt","cwd":%q}}`+"\n", dir)
	want := `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"error","message":"wordcount: cannot read secret.txt: permission denied"}}}` + "\n"
	py, _ := runPython(t, in)
	gt, _ := runGo(t, in, 2)
	sameAnswers(t, "go", gt, "python", py, in)
	if got, _ := takeAnswer(t, py, "1"); got != want {
		t.Errorf("python:\n got %s\nwant %s", got, want)
	}
}

// checkAnswers pins the answers that matter to a reader of the contract,
// so that both implementations agreeing on a wrong answer still fails.
func checkAnswers(t *testing.T, dir, out string) {
	t.Helper()
	table := `{"kind":"table","title":"wordcount","columns":["file","lines","words","chars","bytes"],"rows":[["notes.txt","2","9","44","44"]]}`
	want := []string{
		`{"jsonrpc":"2.0","id":"early","error":{"code":-32600,"message":"wordcount: command/complete before initialize"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocol":5,"name":"wordcount","version":"0.1.0","tools":[{"name":"count","description":"Counts the words, lines and characters in a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"The file to count: relative to the working directory, or absolute."}},"required":["path"]}}],"commands":[{"name":"wordcount","hint":"count the words in a file","args":{"kind":"free","hint":"<path>"},"instant":true,"family":"plugin"}]}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"wordcount: already initialized"}}`,
		`{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c3","tail":"reading notes.txt"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"output":{"parts":[{"type":"text","text":"notes.txt: 2 lines, 9 words, 44 characters, 44 bytes"}],"display":` + table + `}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"output":{"parts":[{"type":"text","text":"utf8.txt: 3 lines, 12 words, 55 characters, 63 bytes"}],"display":{"kind":"table","title":"wordcount","columns":["file","lines","words","chars","bytes"],"rows":[["utf8.txt","3","12","55","63"]]}}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"output":{"parts":[{"type":"text","text":"empty.txt: 0 lines, 0 words, 0 characters, 0 bytes"}],"display":{"kind":"table","title":"wordcount","columns":["file","lines","words","chars","bytes"],"rows":[["empty.txt","0","0","0","0"]]}}}}`,
		`{"jsonrpc":"2.0","id":6,"result":{"output":{"parts":[{"type":"text","text":"wordcount: cannot read sub: is a directory"}],"isError":true}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"output":{"parts":[{"type":"text","text":"wordcount: cannot read missing.txt: no such file or directory"}],"isError":true}}}`,
		`{"jsonrpc":"2.0","id":9,"result":{"output":{"parts":[{"type":"text","text":"wordcount: cannot read fifo: not a regular file"}],"isError":true}}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"output":{"parts":[{"type":"text","text":"we<i>rd & co.txt: 1 lines, 3 words, 5 characters, 5 bytes"}],"display":{"kind":"table","title":"wordcount","columns":["file","lines","words","chars","bytes"],"rows":[["we<i>rd & co.txt","1","3","5","5"]]}}}}`,
		`{"jsonrpc":"2.0","id":13,"result":{"output":{"parts":[{"type":"text","text":"wordcount: path is required"}],"isError":true}}}`,
		`{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c\"str\\u0069ng-id\"","tail":"reading notes.txt"}}`,
		`{"jsonrpc":"2.0","id":"string-id","result":{"output":`,
		`{"jsonrpc":"2.0","id":18,"result":{"output":{"parts":[{"type":"text","text":"spaces.txt: 2 lines, 7 words, 17 characters, 18 bytes"}]`,
		`{"jsonrpc":"2.0","id":17,"error":{"code":-32602,"message":"wordcount: no tool \"nope\""}}`,
		`{"jsonrpc":"2.0","id":20,"result":{"outcome":{"kind":"view","view":` + table + `}}}`,
		`{"jsonrpc":"2.0","id":21,"result":{"outcome":{"kind":"view","view":` + table + `}}}`,
		`{"jsonrpc":"2.0","id":22,"result":{"outcome":{"kind":"error","message":"usage: /wordcount <path>"}}}`,
		`{"jsonrpc":"2.0","id":24,"result":{"outcome":{"kind":"error","message":"wordcount: cannot read missing.txt: no such file or directory"}}}`,
		`{"jsonrpc":"2.0","id":27,"error":{"code":-32602,"message":"wordcount: no command \"nope\""}}`,
		`{"jsonrpc":"2.0","id":30,"result":{"completions":[{"value":"bad\ufffdname.txt"},{"value":"ctl\u0001\u2028.txt"},{"value":"empty.txt"},{"value":"fifo"},{"value":"notes.txt"},{"value":"nothing.md"},{"value":"spaces.txt"},{"value":"sub/"},{"value":"utf8.txt"},{"value":"we<i>rd & co.txt"}]}}`,
		`{"jsonrpc":"2.0","id":31,"result":{"completions":[{"value":"notes.txt"},{"value":"nothing.md"}]}}`,
		`{"jsonrpc":"2.0","id":32,"result":{"completions":[{"value":".hidden"}]}}`,
		`{"jsonrpc":"2.0","id":33,"result":{"completions":[{"value":"sub/a.txt"},{"value":"sub/deeper/"}]}}`,
		`{"jsonrpc":"2.0","id":34,"result":{"completions":[{"value":"sub/.b.txt"}]}}`,
		`{"jsonrpc":"2.0","id":35,"result":{"completions":[]}}`,
		`{"jsonrpc":"2.0","id":38,"result":{"completions":[{"value":"` + dir + `/sub/"}]}}`,
		`{"jsonrpc":"2.0","id":41,"error":{"code":-32601,"message":"wordcount: no method \"hook/decide\""}}`,
		`{"jsonrpc":"2.0","id":42,"error":{"code":-32602,"message":"wordcount: bad params: args must be a string"}}`,
		`{"jsonrpc":"2.0","id":43,"error":{"code":-32602,"message":"wordcount: bad params: params must be an object"}}`,
		`{"jsonrpc":"2.0","id":44,"error":{"code":-32602,"message":"wordcount: no command \"\""}}`,
		`{"jsonrpc":"2.0","id":45,"result":{"outcome":{"kind":"error","message":"wordcount: cannot read x` + "\ufffd" + `y: no such file or directory"}}}`,
		`{"jsonrpc":"2.0","id":46,"result":{"outcome":{"kind":"error","message":"wordcount: cannot read ` + "\ufffd" + `\u2029: no such file or directory"}}}`,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"wordcount: no method \"nope\""}}`,
		`{"jsonrpc":"2.0","id":99,"result":{"completions":[{"value":"empty.txt"}]}}`,
	}
	// In order: a progress line comes before its call's answer.
	lines := strings.Split(out, "\n")
	next := 0
	for _, w := range want {
		i := next
		for i < len(lines) && !strings.HasPrefix(lines[i], w) {
			i++
		}
		if i == len(lines) {
			t.Fatalf("no answer after line %d starts with\n%s\nanswers:\n%s", next, w, out)
		}
		next = i + 1
	}
	// Requests that must go unanswered: the notification, the bad ids,
	// the stray response, the lines that are not messages.
	answered := 0
	for _, l := range lines {
		if strings.Contains(l, `"id":`) {
			answered++
		}
	}
	if want := 48; answered != want {
		t.Errorf("%d answers, want %d (one per request with a string or integer id)", answered, want)
	}
	if !strings.HasSuffix(out, "}\n") {
		t.Errorf("output does not end with a complete line")
	}
}

// TestLockstep sends one request at a time and reads its answer before the
// next: each answer must be flushed as soon as it is written, not at exit.
func TestLockstep(t *testing.T) {
	needPython(t)
	dir := fixture(t)
	reqs := transcript(dir)[:4]
	t.Run("python", func(t *testing.T) {
		cmd := exec.Command("python3", pyMain)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(watchdog, func() { cmd.Process.Kill() })
		defer timer.Stop()
		lockstep(t, reqs, in, bufio.NewReader(out))
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit at EOF: %v", err)
		}
	})
	t.Run("go", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error)
		go func() {
			err := newPlugin(io.Discard).Serve(context.Background(), inR, outW)
			outW.Close()
			done <- err
		}()
		timer := time.AfterFunc(watchdog, func() { inR.CloseWithError(fmt.Errorf("watchdog")); outR.CloseWithError(fmt.Errorf("watchdog")) })
		defer timer.Stop()
		lockstep(t, reqs, inW, bufio.NewReader(outR))
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve at EOF: %v", err)
		}
	})
}

// lockstep writes each request and reads lines until its answer arrives.
func lockstep(t *testing.T, reqs []string, in io.Writer, out *bufio.Reader) {
	t.Helper()
	for _, req := range reqs {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(req), &m)
		if _, err := io.WriteString(in, req+"\n"); err != nil {
			t.Fatal(err)
		}
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for the answer to %s: %v", req, err)
			}
			var a struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(line), &a) == nil && bytes.Equal(a.ID, m.ID) {
				break
			}
		}
	}
}

// TestReasonsAgree checks that both languages map the same errno to the
// same reason, including those this machine cannot produce on demand (a
// root user is never refused a read).
func TestReasonsAgree(t *testing.T) {
	needPython(t)
	errnos := []syscall.Errno{syscall.ENOENT, syscall.ENOTDIR, syscall.EISDIR, syscall.EACCES, syscall.EPERM, syscall.EIO, syscall.ELOOP, syscall.ENAMETOOLONG}
	want := map[syscall.Errno]string{
		syscall.ENOENT: reasonNotExist, syscall.ENOTDIR: reasonNotExist, syscall.EISDIR: reasonIsDir,
		syscall.EACCES: reasonPermission, syscall.EPERM: reasonPermission,
		syscall.EIO: reasonFailed, syscall.ELOOP: reasonFailed, syscall.ENAMETOOLONG: reasonFailed,
	}
	// Python: make os.stat fail with each errno and print read's message.
	script := "import os, sys\nsys.path.insert(0, sys.argv[1])\nimport main\n" +
		"for n in sys.argv[2:]:\n" +
		"    def fail(p, n=int(n)): raise OSError(n, os.strerror(n))\n" +
		"    main.os.stat = fail\n" +
		"    try: main.read('/', 'f.txt')\n" +
		"    except main.CannotRead as e: print(e)\n"
	args := []string{"-c", script, filepath.Dir(pyMain)}
	for _, e := range errnos {
		args = append(args, fmt.Sprint(int(e)))
	}
	cmd := exec.Command("python3", args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // leave no __pycache__ in the example
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(errnos) {
		t.Fatalf("python printed %d lines for %d errnos:\n%s", len(lines), len(errnos), out)
	}
	for i, e := range errnos {
		goText := (&readError{"f.txt", reasonOf(&fs.PathError{Op: "stat", Path: "/f.txt", Err: e})}).Error()
		wantText := "cannot read f.txt: " + want[e]
		if goText != ownName["go"]+": "+wantText || lines[i] != "wordcount: "+wantText {
			t.Errorf("%v: go %q, python %q, want each name and %q", e, goText, lines[i], wantText)
		}
	}
}
