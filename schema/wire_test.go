package schema

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// requestLine is a request exactly as the bridge's JSON-RPC library writes
// it, so the envelope under test is the real one.
func requestLine(t *testing.T, id uint64, method string, params any) []byte {
	t.Helper()
	r := &jsonrpc2.Request{Method: method, ID: jsonrpc2.ID{Num: id}}
	if err := r.SetParams(params); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func notificationLine(t *testing.T, method string, params any) []byte {
	t.Helper()
	r := &jsonrpc2.Request{Method: method, Notif: true}
	if err := r.SetParams(params); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func responseLine(t *testing.T, id uint64, result any) []byte {
	t.Helper()
	r := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: id}}
	if err := r.SetResult(result); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wordcount is the example plugin, run as the host runs it.
type wordcount struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte // every line the plugin printed, closed at EOF
	cmd    *exec.Cmd
	stderr bytes.Buffer
	ctx    context.Context
	sent   [][]byte
	got    [][]byte
}

func startWordcount(t *testing.T, ctx context.Context, cwd string) *wordcount {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "examples", "plugins", "wordcount", "main.py")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the example plugin is missing: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed to run the example plugin: %v", err)
	}
	w := &wordcount{t: t, lines: make(chan []byte), ctx: ctx}
	w.cmd = exec.CommandContext(ctx, "python3", script) // the deadline also ends a plugin that hangs
	w.cmd.Dir = cwd
	w.cmd.Stderr = &w.stderr
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), protocol.DefaultMaxLine)
		for sc.Scan() {
			w.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	return w
}

// send writes one line to the plugin.
func (w *wordcount) send(line []byte) {
	w.t.Helper()
	w.sent = append(w.sent, line)
	if _, err := w.stdin.Write(append(bytes.Clone(line), '\n')); err != nil {
		w.t.Fatalf("writing to the plugin: %v (stderr: %s)", err, w.stderr.String())
	}
}

// call sends a request and returns the response with its id, and every
// line the plugin printed before it.
func (w *wordcount) call(id uint64, method string, params any) (resp []byte, before [][]byte) {
	w.t.Helper()
	w.send(requestLine(w.t, id, method, params))
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("the plugin ended before answering %s (stderr: %s)", method, w.stderr.String())
			}
			w.got = append(w.got, line)
			var m struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				w.t.Fatalf("the plugin printed a line that is not JSON: %q", line)
			}
			if m.Method == "" && m.ID != nil && string(*m.ID) == fmt.Sprint(id) {
				return line, before
			}
			before = append(before, line)
		case <-w.ctx.Done():
			w.t.Fatalf("no answer to %s: %v (stderr: %s)", method, w.ctx.Err(), w.stderr.String())
		}
	}
}

// stop closes stdin, as the host does, and waits for the plugin to exit
// and its reader to finish.
func (w *wordcount) stop() {
	w.t.Helper()
	w.stdin.Close()
	for line := range w.lines {
		w.got = append(w.got, line)
	}
	if err := w.cmd.Wait(); err != nil {
		w.t.Errorf("the plugin exited with %v (stderr: %s)", err, w.stderr.String())
	}
}

// TestWireMessagesValidate drives the real example plugin through the
// handshake, a tool call (with its progress line), a command, a completion
// and a method it does not know, and validates every line that crossed, in
// both directions, against the generated schema.
func TestWireMessagesValidate(t *testing.T) {
	s := schemaUnderTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("one two three\nfour five\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWordcount(t, ctx, cwd)
	defer func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.stop()
		}
	}()

	type exchange struct {
		method string
		resp   []byte
	}
	var exchanges []exchange
	var notes [][]byte // every notification the plugin sent
	do := func(id uint64, method string, params any) ([]byte, [][]byte) {
		resp, before := w.call(id, method, params)
		exchanges = append(exchanges, exchange{method, resp})
		notes = append(notes, before...)
		return resp, before
	}

	do(1, protocol.MethodInitialize, protocol.InitializeParams{Protocol: protocol.Version, PluginRoot: filepath.Dir(cwd), Config: nil, Env: map[string]string{}})
	_, progress := do(2, protocol.MethodToolCall, protocol.ToolCallParams{CallID: "call-1", Name: "count", Input: json.RawMessage(`{"path":"notes.txt"}`), Cwd: cwd, Session: "s1", Turn: 1})
	do(3, protocol.MethodToolCall, protocol.ToolCallParams{CallID: "call-2", Name: "count", Input: json.RawMessage(`{"path":"missing.txt"}`), Cwd: cwd, Session: "s1", Turn: 1})
	w.send(notificationLine(t, protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "call-2"}))
	do(4, protocol.MethodCommandRun, protocol.CommandRunParams{Name: "wordcount", Args: "notes.txt", Cwd: cwd, Session: "s1"})
	do(5, protocol.MethodCommandRun, protocol.CommandRunParams{Name: "wordcount", Args: "", Cwd: cwd, Session: "s1"})
	do(6, protocol.MethodCommandComplete, protocol.CommandCompleteParams{Name: "wordcount", Partial: "no", Cwd: cwd})
	unknown, _ := w.call(7, "bogus/method", map[string]any{})
	w.stop()

	// Every line the host sent is a valid message, except the request for
	// a method this protocol does not have.
	unknownReq := w.sent[len(w.sent)-1]
	for _, line := range w.sent[:len(w.sent)-1] {
		if err := validate(s.root, line); err != nil {
			t.Errorf("host→plugin line does not validate: %s\n%v", line, err)
		}
	}
	if err := validate(s.root, unknownReq); err == nil {
		t.Errorf("a request for an unknown method validates: %s", unknownReq)
	}

	// Every line the plugin printed is a valid message.
	if len(w.got) != len(exchanges)+1+len(notes) {
		t.Errorf("the plugin printed %d lines, want %d answers and %d notifications: %q", len(w.got), len(exchanges)+1, len(notes), w.got)
	}
	for _, line := range w.got {
		if err := validate(s.root, line); err != nil {
			t.Errorf("plugin→host line does not validate: %s\n%v", line, err)
		}
	}

	// The progress notification came, and is a tool/progress.
	if len(progress) != 1 || !bytes.Contains(progress[0], []byte(`"method":"tool/progress"`)) {
		t.Errorf("want one tool/progress line before the tool's answer, got %q", progress)
	} else if err := validate(s.at(t, s.tableRef(t, "notifications", protocol.NotifyToolProgress, "params")), mustField(t, progress[0], "params")); err != nil {
		t.Errorf("tool/progress params: %v", err)
	}

	// Each result is valid for its own method, not merely for some method.
	for _, x := range exchanges {
		result := mustField(t, x.resp, "result")
		if err := validate(s.at(t, s.tableRef(t, "methods", x.method, "result")), result); err != nil {
			t.Errorf("%s result does not validate against its method's result: %s\n%v", x.method, result, err)
		}
	}
	// The answer to the unknown method is an error, and a valid response.
	if !bytes.Contains(unknown, []byte(`"code":-32601`)) {
		t.Errorf("the unknown method was answered %s, want error -32601", unknown)
	}

	// A result checked against another method's result fails: the
	// per-method check above is not vacuous.
	cmdResult := mustField(t, exchanges[3].resp, "result")
	if err := validate(s.at(t, s.tableRef(t, "methods", protocol.MethodToolCall, "result")), cmdResult); err == nil {
		t.Errorf("a command/run result validates as a tool/call result: %s", cmdResult)
	}
}

func mustField(t *testing.T, line []byte, field string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	v, ok := m[field]
	if !ok {
		t.Fatalf("%s has no %q", line, field)
	}
	return v
}

// TestInvalidMessagesFail proves the schema is not vacuous: lines that
// break the contract in one place each fail.
func TestInvalidMessagesFail(t *testing.T) {
	s := schemaUnderTest(t)
	for name, line := range map[string]string{
		"tool/progress without callId":        `{"jsonrpc":"2.0","method":"tool/progress","params":{"tail":"reading"}}`,
		"tool/progress with an id":            `{"jsonrpc":"2.0","id":3,"method":"tool/progress","params":{"callId":"c","tail":"x"}}`,
		"view of kind bogus":                  `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"view","view":{"kind":"bogus","text":"x"}}}}`,
		"table view holding items":            `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"view","view":{"kind":"table","columns":["a"],"items":["x"]}}}}`,
		"stack holding a bad view":            `{"jsonrpc":"2.0","id":1,"result":{"output":{"parts":[],"display":{"kind":"stack","views":[{"kind":"list","text":"x"}]}}}}`,
		"view outcome without its view":       `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"view"}}}`,
		"text outcome with a view":            `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"text","text":"t","view":{"kind":"text"}}}}`,
		"outcome of kind bogus":               `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"kind":"bogus"}}}`,
		"part of type image":                  `{"jsonrpc":"2.0","id":1,"result":{"output":{"parts":[{"type":"image","text":""}]}}}`,
		"result of no method":                 `{"jsonrpc":"2.0","id":1,"result":{"answer":42}}`,
		"result and error both":               `{"jsonrpc":"2.0","id":1,"result":{"completions":[]},"error":{"code":1,"message":"x"}}`,
		"response without id":                 `{"jsonrpc":"2.0","result":{"completions":[]}}`,
		"jsonrpc 1.0":                         `{"jsonrpc":"1.0","id":1,"method":"command/complete","params":{"name":"n","partial":"","cwd":"/"}}`,
		"no jsonrpc member":                   `{"id":1,"method":"command/complete","params":{"name":"n","partial":"","cwd":"/"}}`,
		"initialize without env":              `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":5,"pluginRoot":"/p","config":null}}`,
		"tool/call with an unknown member":    `{"jsonrpc":"2.0","id":1,"method":"tool/call","params":{"callId":"c","name":"count","input":{},"cwd":"/","session":"s","turn":1,"extra":1}}`,
		"handshake tool with an empty name":   `{"jsonrpc":"2.0","id":1,"result":{"protocol":5,"name":"x","version":"1","tools":[{"name":"","description":"d"}]}}`,
		"hook decision allow":                 `{"jsonrpc":"2.0","id":1,"result":{"outcome":"allow"}}`,
		"bingo.host method shout":             `{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"shout","params":{}}}`,
		"bingo.host notice at level loud":     `{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"notice","params":{"level":"loud","message":"m"}}}`,
		"bingo.host ask without its question": `{"jsonrpc":"2.0","id":1,"method":"service/call","params":{"key":"bingo.host","method":"ask","params":{"call":"c"}}}`,
		"stream event toolCall without delta": `{"jsonrpc":"2.0","method":"provider/delta","params":{"streamId":"s","event":{"kind":"toolCall"}}}`,
		"not an object":                       `[1,2]`,
	} {
		if err := validate(s.root, []byte(line)); err == nil {
			t.Errorf("%s: validates, but breaks the contract: %s", name, line)
		}
	}
}

// TestGoValuesValidate: what a Go peer sends for every method and
// notification, through the real JSON-RPC library, validates — the request
// or notification against the root, params and result against their
// method's $defs. Every name in the schema's tables has a sample here.
func TestGoValuesValidate(t *testing.T) {
	s := schemaUnderTest(t)
	table := &sdk.View{Kind: sdk.ViewTable, Title: "t", Columns: []string{"a"}, Rows: [][]string{{"1"}}}
	stack := &sdk.View{Kind: sdk.ViewStack, Views: []sdk.View{
		{Kind: sdk.ViewText, Text: "hello"}, *table,
		{Kind: sdk.ViewList, Items: []string{"x"}},
		{Kind: sdk.ViewKeyValue, Pairs: []sdk.KeyValue{{Key: "k", Value: "v"}}},
	}}
	msgs := []sdk.Message{
		{Role: sdk.RoleUser, Content: "hi"},
		{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{{ID: "1", Name: "count", Input: json.RawMessage(`{"path":"a"}`)}}},
		{Role: sdk.RoleTool, Content: "3 words", ToolCallID: "1"},
	}
	methods := map[string]struct{ params, result any }{
		protocol.MethodInitialize: {
			protocol.InitializeParams{Protocol: 5, PluginRoot: "/p", Config: json.RawMessage(`{"k":1}`), Env: map[string]string{"A": "b"}},
			protocol.InitializeResult{Protocol: 5, Name: "all", Version: "1",
				Tools:        []sdk.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Traits: &sdk.ToolTraits{ReadOnly: true, Interrupt: sdk.InterruptCancel}}},
				Commands:     []sdk.CommandSpec{{Name: "c", Args: sdk.CommandArgs{Kind: sdk.ArgsNone}}},
				Contributors: []protocol.ContributorDecl{{ID: "c"}},
				Compactors:   []protocol.CompactorDecl{{ID: "k", Description: "d"}},
				Providers:    []protocol.ProviderDecl{{ID: "p", Models: []string{"m"}}},
				Hooks:        []protocol.HookDecl{{ID: "h", Decide: []string{"tool/before"}, Observe: []string{"turn/end"}}},
				Services:     []protocol.ServiceDecl{{Key: "svc", Methods: []string{"m"}}},
			},
		},
		protocol.MethodToolCall: {
			protocol.ToolCallParams{CallID: "c", Name: "t", Input: json.RawMessage(`{}`), Cwd: "/", Session: "s", Turn: 2},
			protocol.ToolCallResult{Output: sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("x")}, Display: stack, IsError: true}},
		},
		protocol.MethodCommandRun: {
			protocol.CommandRunParams{Name: "c", Args: "a b", Cwd: "/", Session: "s"},
			protocol.CommandRunResult{Outcome: sdk.CommandOutcome{Kind: sdk.OutcomeView, View: table}},
		},
		protocol.MethodCommandComplete: {
			protocol.CommandCompleteParams{Name: "c", Partial: "no", Cwd: "/"},
			protocol.CommandCompleteResult{Completions: []sdk.Completion{{Value: "notes.txt", Hint: "file"}}},
		},
		protocol.MethodContextContribute: {
			protocol.ContextContributeParams{ID: "c", Query: sdk.Query{Prompt: "p", Cwd: "/", Session: "s", Turn: 1, Budget: 100}},
			protocol.ContextContributeResult{Pieces: []sdk.Piece{{Title: "t", Text: "x"}}},
		},
		protocol.MethodCompactorCompact: {
			protocol.CompactorCompactParams{ID: "k", Context: msgs, Reason: "budget"},
			protocol.CompactorCompactResult{Compaction: sdk.Compaction{Messages: msgs[:1], Summary: "s"}},
		},
		protocol.MethodProviderStream: {
			protocol.ProviderStreamParams{ID: "p", StreamID: "s1", Request: sdk.ProviderRequest{Model: "m", System: "be brief", Messages: msgs, Tools: []sdk.ToolSpec{{Name: "t", Description: "d"}}}},
			protocol.ProviderStreamResult{End: sdk.StreamEnd{StopReason: "end_turn"}},
		},
		protocol.MethodHookDecide: {
			protocol.HookDecideParams{ID: "h", Site: sdk.SiteTool, Point: sdk.PointBefore, Payload: json.RawMessage(`{"callId":"c","name":"t","input":{"path":"a"},"cwd":"/p","session":"s","turn":1}`)},
			protocol.HookDecideResult{Outcome: sdk.HookRedirect, Value: json.RawMessage(`{"path":"b"}`), Reason: "r"},
		},
		protocol.MethodServiceCall: {
			protocol.ServiceCallParams{Key: "svc", Method: "m", Params: json.RawMessage(`[1]`)},
			protocol.ServiceCallResult{Result: json.RawMessage(`{"ok":true}`)},
		},
	}
	notes := map[string]any{
		protocol.NotifyToolProgress:   protocol.ToolProgress{CallID: "c", Tail: "reading"},
		protocol.NotifyToolCancel:     protocol.ToolCancel{CallID: "c"},
		protocol.NotifyProviderDelta:  protocol.ProviderDelta{StreamID: "s1", Event: sdk.StreamEvent{Kind: sdk.EventToolCall, ToolCall: &sdk.ToolCallDelta{Index: 0, ID: "1", Name: "t", ArgumentsDelta: `{"pa`}}},
		protocol.NotifyProviderCancel: protocol.ProviderCancel{StreamID: "s1"},
		protocol.NotifyHookObserve:    protocol.HookObserve{ID: "h", Site: sdk.SiteTurn, Point: sdk.PointEnd, Payload: json.RawMessage(`{"turn":1,"steps":2,"text":"done"}`)},
		protocol.NotifyPluginDeclare: protocol.InitializeResult{Protocol: protocol.Version, Name: "wc", Version: "1",
			Tools: []sdk.ToolSpec{{Name: "count", Description: "counts", InputSchema: json.RawMessage(`{"type":"object"}`)}}},
	}
	host := map[string]struct{ params, result any }{
		protocol.HostAsk:    {protocol.AskParams{Call: "c", Question: "sure?"}, protocol.AskResult{Answer: "yes"}},
		protocol.HostNotice: {protocol.NoticeParams{Level: "warn", Message: "m"}, json.RawMessage(`{}`)},
	}

	check := func(what string, sch string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(s.at(t, sch), b); err != nil {
			t.Errorf("%s does not validate: %s\n%v", what, b, err)
		}
	}
	for _, name := range tableNames(s, "methods") {
		m, ok := methods[name]
		if !ok {
			t.Errorf("method %s has no sample in TestGoValuesValidate", name)
			continue
		}
		check(name+" params", s.tableRef(t, "methods", name, "params"), m.params)
		check(name+" result", s.tableRef(t, "methods", name, "result"), m.result)
		if err := validate(s.root, requestLine(t, 9, name, m.params)); err != nil {
			t.Errorf("%s request does not validate: %v", name, err)
		}
		if err := validate(s.root, responseLine(t, 9, m.result)); err != nil {
			t.Errorf("%s response does not validate: %v", name, err)
		}
	}
	for _, name := range tableNames(s, "notifications") {
		p, ok := notes[name]
		if !ok {
			t.Errorf("notification %s has no sample in TestGoValuesValidate", name)
			continue
		}
		check(name+" params", s.tableRef(t, "notifications", name, "params"), p)
		if err := validate(s.root, notificationLine(t, name, p)); err != nil {
			t.Errorf("%s notification does not validate: %v", name, err)
		}
	}
	for _, name := range tableNames(s, "hostService") {
		m, ok := host[name]
		if !ok {
			t.Errorf("bingo.host %s has no sample in TestGoValuesValidate", name)
			continue
		}
		check("bingo.host "+name+" params", s.tableRef(t, "hostService", name, "params"), m.params)
		if r, ok := m.result.(protocol.AskResult); ok {
			check("bingo.host "+name+" result", s.tableRef(t, "hostService", name, "result"), r)
		}
		inner, _ := json.Marshal(m.params)
		call := protocol.ServiceCallParams{Key: protocol.HostServiceKey, Method: name, Params: inner}
		if err := validate(s.root, requestLine(t, 10, protocol.MethodServiceCall, call)); err != nil {
			t.Errorf("service/call to bingo.host %s does not validate: %v", name, err)
		}
		res, _ := json.Marshal(m.result)
		if err := validate(s.root, responseLine(t, 10, protocol.ServiceCallResult{Result: res})); err != nil {
			t.Errorf("the answer to bingo.host %s does not validate: %v", name, err)
		}
	}
	// A JSON-RPC error answer, as the library writes it.
	b, _ := json.Marshal(&jsonrpc2.Response{ID: jsonrpc2.ID{Str: "x", IsString: true}, Error: &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no"}})
	if err := validate(s.root, b); err != nil {
		t.Errorf("an error response does not validate: %s\n%v", b, err)
	}
}

func tableNames(s *compiledSchema, table string) []string {
	tab, _ := s.doc[table].(map[string]any)
	if table == "hostService" {
		tab, _ = tab["methods"].(map[string]any)
	}
	var names []string
	for k := range tab {
		names = append(names, k)
	}
	if len(names) == 0 {
		panic("empty table " + table)
	}
	return names
}
