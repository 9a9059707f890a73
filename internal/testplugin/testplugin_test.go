package testplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHandshakeDeclaresEverything(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":5}}`)
	}()
	served := make(chan error, 1)
	go func() { served <- Serve(t.Context(), inR, outW, io.Discard); outW.Close() }()
	line := make([]byte, 64<<10)
	n, _ := io.ReadAtLeast(outR, line, 1)
	for line[n-1] != '\n' {
		m, err := outR.Read(line[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	var resp struct{ Result protocol.InitializeResult }
	if err := json.Unmarshal(line[:n], &resp); err != nil {
		t.Fatal(err)
	}
	d := resp.Result
	var tools []string
	for _, s := range d.Tools {
		tools = append(tools, s.Name)
	}
	wantTools := []string{"echo", "slow", "hang", "spin", "exit", "garbage", "twice", "file", "big", "ask", "service", "notice", "stderr", "flood", "trusted", "table", "config", "env", "terminal"}
	if !reflect.DeepEqual(tools, wantTools) {
		t.Errorf("tools = %v", tools)
	}
	if len(d.Commands) != 1 || d.Commands[0].Name != "greet" || d.Commands[0].Args.Kind != sdk.ArgsFree {
		t.Errorf("commands = %+v", d.Commands)
	}
	if !reflect.DeepEqual(d.Contributors, []protocol.ContributorDecl{{ID: "ctx"}}) ||
		!reflect.DeepEqual(d.Compactors, []protocol.CompactorDecl{{ID: "keep-last"}}) ||
		!reflect.DeepEqual(d.Providers, []protocol.ProviderDecl{{ID: "scripted"}}) ||
		!reflect.DeepEqual(d.Hooks, []protocol.HookDecl{{ID: "guard", Decide: []string{"tool/before"}, Observe: []string{"tool/after", "turn/end"}}}) ||
		!reflect.DeepEqual(d.Services, []protocol.ServiceDecl{{Key: "test.echo"}}) {
		t.Errorf("declaration = %+v", d)
	}
	for _, s := range d.Tools {
		if s.Name == "trusted" {
			want := sdk.ToolTraits{Trusted: true, ReadOnly: true, ConcurrencySafe: true, Interrupt: sdk.InterruptCancel}
			if s.Traits == nil || *s.Traits != want {
				t.Errorf("trusted claims %+v", s.Traits)
			}
		} else if s.Traits != nil {
			t.Errorf("%s claims %+v", s.Name, s.Traits)
		}
	}
}

func TestEchoProgressThenAnswer(t *testing.T) {
	r := start(t, "")
	if out := r.tool("c1", "echo", `{"text":"hi"}`); out.Text != "hi" || out.IsError {
		t.Errorf("echo = %+v", out)
	}
	if p := r.notesOf(protocol.NotifyToolProgress); len(p) != 1 || string(p[0]) != `{"callId":"c1","tail":"echo: hi"}` {
		t.Errorf("progress before the answer = %s", p)
	}
}

func TestSlowDoneOrCancelled(t *testing.T) {
	r := start(t, "")
	if out := r.tool("s0", "slow", `{"ms":1}`); out.Text != "done" {
		t.Errorf("slow 1ms = %+v", out)
	}
	w, _ := r.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "s1", Name: "slow", Input: json.RawMessage(`{"ms":600000}`)})
	r.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "s1"})
	var res protocol.ToolCallResult
	if err := w.Wait(t.Context(), &res); err != nil || res.Output.Text() != "cancelled" {
		t.Errorf("cancelled slow = %+v, %v", res, err)
	}
}

func TestHangIgnoresCancelUntilTheInstanceEnds(t *testing.T) {
	r := start(t, "")
	w, _ := r.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "h", Name: "hang"})
	r.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "h"})
	// Still serving, and still not answering the hung call.
	r.tool("e", "echo", `{"text":"x"}`)
	select {
	case <-r.resps:
	default:
	}
	r.conn.Close() // stdin ends: the instance ends
	if err := <-r.served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	r.served <- nil
	if err := w.Wait(t.Context(), nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("hang = %v, want no answer", err)
	}
}

func TestExitEndsTheInstanceWithItsCode(t *testing.T) {
	for _, code := range []int{3, 0} {
		r := start(t, "")
		err := r.conn.Call(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{Name: "exit", Input: json.RawMessage(fmt.Sprintf(`{"code":%d}`, code))}, nil)
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			t.Errorf("exit %d answered %v", code, err)
		}
		err = <-r.served
		r.served <- nil
		var ee *ExitError
		switch {
		case code == 0 && err != nil:
			t.Errorf("exit 0: Serve = %v, want nil", err)
		case code != 0 && (!errors.As(err, &ee) || ee.Code != code || err.Error() != "exit status 3"):
			t.Errorf("exit %d: Serve = %v", code, err)
		}
	}
}

func TestGarbageLinesThenOK(t *testing.T) {
	r := start(t, "")
	if out := r.tool("g", "garbage", ""); out.Text != "ok" {
		t.Errorf("garbage = %+v", out)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if want := []string{"hello", "{not json", `{"jsonrpc":"2.0"}`}; !reflect.DeepEqual(r.skipped, want) {
		t.Errorf("skipped lines = %q, want %q", r.skipped, want)
	}
}

func TestTwiceAnswersThreeTimes(t *testing.T) {
	r := start(t, "")
	for len(r.resps) > 0 {
		<-r.resps
	}
	out := r.tool("t", "twice", "")
	if !strings.HasPrefix(out.Text, "twice #") {
		t.Errorf("twice = %+v", out)
	}
	first, again, stray := <-r.resps, <-r.resps, <-r.resps
	if again.ID != first.ID || string(*again.Result) != string(*first.Result) {
		t.Errorf("second answer %+v, first %+v", again, first)
	}
	if stray.ID != (jsonrpc2.ID{Str: "testplugin-unknown-id", IsString: true}) || string(*stray.Result) != string(*first.Result) {
		t.Errorf("stray answer %+v", stray)
	}
	// And the connection goes on.
	r.tool("e", "echo", `{"text":"still here"}`)
}

func TestTwiceNeedsItsLockedWriter(t *testing.T) {
	p := New(io.Discard)
	for _, tl := range p.Tools {
		if tl.Spec().Name == "twice" {
			out, err := tl.Call(t.Context(), sdk.ToolCall{}, nil)
			if err != nil || !out.IsError {
				t.Errorf("twice on a plain writer = %+v, %v", out, err)
			}
		}
	}
}

func TestBigTableTrustedConfigEnv(t *testing.T) {
	r := start(t, `{"depth":3}`)
	if out := r.tool("b", "big", `{"bytes":100000}`); out.Text != strings.Repeat("x", 100000) {
		t.Errorf("big is %d bytes", len(out.Text))
	}
	out := r.tool("t", "table", "")
	var o sdk.ToolOutput
	json.Unmarshal(out.Output, &o)
	want := sdk.View{Kind: sdk.ViewTable, Columns: []string{"a", "b"}, Rows: [][]string{{"1", "2"}}}
	if o.Display == nil || !reflect.DeepEqual(*o.Display, want) || o.Text() != want.Fold() {
		t.Errorf("table = %s", out.Output)
	}
	if out := r.tool("tr", "trusted", ""); out.Text != "trusted" {
		t.Errorf("trusted = %+v", out)
	}
	if out := r.tool("c", "config", ""); out.Text != `{"depth":3}` {
		t.Errorf("config = %+v", out)
	}
	t.Setenv("TESTPLUGIN_PROBE", "here")
	out = r.tool("e", "env", "")
	lines := strings.Split(out.Text, "\n")
	// The process's environment with the handshake's env (A=1) laid over it.
	if !slices.Contains(lines, "TESTPLUGIN_PROBE=here") || !slices.Contains(lines, "A=1") || !slices.IsSorted(lines) || len(lines) != len(os.Environ())+1 {
		t.Errorf("env = %q", out.Text)
	}
}

func TestConfigNull(t *testing.T) {
	r := start(t, "")
	if out := r.tool("c", "config", ""); out.Text != "null" {
		t.Errorf("config = %+v", out)
	}
}

func TestAskNoticeStderr(t *testing.T) {
	r := start(t, "")
	calls := make(chan protocol.ServiceCallParams, 10)
	r.mu.Lock()
	r.service = func(p protocol.ServiceCallParams) (any, error) {
		calls <- p
		var a protocol.AskParams
		json.Unmarshal(p.Params, &a)
		if p.Method == protocol.HostAsk && a.Call != "mine" {
			return nil, errors.New("call " + a.Call + " is not yours")
		}
		return protocol.AskResult{Answer: "yes"}, nil
	}
	r.mu.Unlock()

	if out := r.tool("mine", "ask", `{"question":"ok?"}`); out.Text != "yes" || out.IsError {
		t.Errorf("ask = %+v", out)
	}
	if p := <-calls; p.Key != protocol.HostServiceKey || p.Method != protocol.HostAsk || string(p.Params) != `{"call":"mine","question":"ok?"}` {
		t.Errorf("ask sent %+v %s", p, p.Params)
	}
	if out := r.tool("mine", "ask", `{"question":"ok?","call":"theirs"}`); out.Text != "call theirs is not yours" || !out.IsError {
		t.Errorf("ask on a foreign call = %+v", out)
	}
	<-calls
	if out := r.tool("n", "notice", `{"message":"hello"}`); out.Text != "ok" {
		t.Errorf("notice = %+v", out)
	}
	if p := <-calls; p.Method != protocol.HostNotice || string(p.Params) != `{"level":"info","message":"hello"}` {
		t.Errorf("notice sent %+v %s", p, p.Params)
	}
	if out := r.tool("s", "stderr", `{"text":"to the log"}`); out.Text != "ok" {
		t.Errorf("stderr = %+v", out)
	}
	if got := <-r.stderr; got != "to the log" {
		t.Errorf("stderr got %q", got)
	}
}

func TestGreetCommand(t *testing.T) {
	r := start(t, "")
	var run protocol.CommandRunResult
	r.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet", Args: "bob"}, &run)
	if run.Outcome != (sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: "hello bob"}) {
		t.Errorf("greet = %+v", run)
	}
	for partial, want := range map[string][]string{"": {"alpha", "beta", "gamma"}, "b": {"beta"}, "z": nil} {
		var comp protocol.CommandCompleteResult
		r.call(protocol.MethodCommandComplete, protocol.CommandCompleteParams{Name: "greet", Partial: partial}, &comp)
		var got []string
		for _, c := range comp.Completions {
			got = append(got, c.Value)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("complete %q = %v, want %v", partial, got, want)
		}
	}
}

func TestContributorAndCompactor(t *testing.T) {
	r := start(t, "")
	var pieces protocol.ContextContributeResult
	r.call(protocol.MethodContextContribute, protocol.ContextContributeParams{ID: "ctx", Query: sdk.Query{Prompt: "hi"}}, &pieces)
	if !reflect.DeepEqual(pieces.Pieces, []sdk.Piece{{Title: "testplugin", Text: "prompt was: hi"}}) {
		t.Errorf("pieces = %+v", pieces)
	}
	msgs := []sdk.Message{{Role: sdk.RoleUser, Content: "1"}, {Role: sdk.RoleAssistant, Content: "2"}, {Role: sdk.RoleUser, Content: "3"}}
	var comp protocol.CompactorCompactResult
	r.call(protocol.MethodCompactorCompact, protocol.CompactorCompactParams{ID: "keep-last", Context: msgs, Reason: "budget"}, &comp)
	if !reflect.DeepEqual(comp.Compaction, sdk.Compaction{Messages: msgs[1:], Summary: "kept 2"}) {
		t.Errorf("compaction = %+v", comp)
	}
	// A slow prompt is answered only when the instance ends.
	w, _ := r.conn.DispatchCall(t.Context(), protocol.MethodContextContribute, protocol.ContextContributeParams{ID: "ctx", Query: sdk.Query{Prompt: "be slow"}})
	r.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet"}, nil) // still serving
	r.conn.Close()
	if err := w.Wait(t.Context(), nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("slow contributor = %v, want no answer", err)
	}
}

func TestScriptedProvider(t *testing.T) {
	r := start(t, "")
	var res protocol.ProviderStreamResult
	r.call(protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "scripted", StreamID: "s1", Request: sdk.ProviderRequest{
		Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "go"}},
	}}, &res)
	msg := sdk.Assemble(deltas(t, r, "s1"))
	if msg.Content != "calling echo" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Name != "plugin__testplugin__echo" || string(msg.ToolCalls[0].Input) != `{"text":"hi"}` || msg.ToolCalls[0].ID == "" {
		t.Errorf("first response = %+v (%s)", msg, res.End.StopReason)
	}
	if n := len(deltas(t, r, "s1")); n != 3 {
		t.Errorf("%d deltas, want the arguments split over two", n)
	}
	r.call(protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "scripted", StreamID: "s2", Request: sdk.ProviderRequest{
		Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "go"}, msg, {Role: sdk.RoleTool, Content: "hi", ToolCallID: msg.ToolCalls[0].ID}},
	}}, &res)
	if got := sdk.Assemble(deltas(t, r, "s2")); got.Content != "done: hi" || len(got.ToolCalls) != 0 {
		t.Errorf("second response = %+v", got)
	}
}

func deltas(t *testing.T, r *rig, stream string) []sdk.StreamEvent {
	var evs []sdk.StreamEvent
	for _, raw := range r.notesOf(protocol.NotifyProviderDelta) {
		var d protocol.ProviderDelta
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if d.StreamID == stream {
			evs = append(evs, d.Event)
		}
	}
	return evs
}

func TestGuardHookAndService(t *testing.T) {
	r := start(t, "")
	for input, want := range map[string]sdk.HookOutcome{`{"text":"forbidden"}`: sdk.HookDeny, `{"text":"fine"}`: sdk.HookContinue} {
		payload, _ := json.Marshal(sdk.ToolCall{ID: "c", Name: "plugin__x__y", Input: json.RawMessage(input)})
		var d protocol.HookDecideResult
		r.call(protocol.MethodHookDecide, protocol.HookDecideParams{ID: "guard", Site: "tool", Point: "before", Payload: payload}, &d)
		if d.Outcome != want || (want == sdk.HookDeny && d.Reason != "guard says no") {
			t.Errorf("guard on %s = %+v", input, d)
		}
	}
	r.notify(protocol.NotifyHookObserve, protocol.HookObserve{ID: "guard", Site: "tool", Point: "after"})
	r.notify(protocol.NotifyHookObserve, protocol.HookObserve{ID: "guard", Site: "turn", Point: "end"})
	if a, b := <-r.stderr, <-r.stderr; a != "guard observed tool/after\n" || b != "guard observed turn/end\n" {
		t.Errorf("observed %q, %q", a, b)
	}
	var res protocol.ServiceCallResult
	r.call(protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "test.echo", Method: "echo", Params: json.RawMessage(`{"a":[1]}`)}, &res)
	if string(res.Result) != `{"a":[1]}` {
		t.Errorf("echo service = %s", res.Result)
	}
	err := r.conn.Call(t.Context(), protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "test.echo", Method: "other"}, nil)
	if rerr, ok := err.(*jsonrpc2.Error); !ok || !strings.Contains(rerr.Message, "unknown method") {
		t.Errorf("other method = %v", err)
	}
}

// TestKilledInstanceEnds is transport/mem's Kill: the ctx is cancelled
// with a call hanging.
func TestKilledInstanceEnds(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	go io.Copy(io.Discard, outR)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, inR, outW, io.Discard); outW.Close() }()
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tool/call","params":{"name":"hang"}}`)
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after kill = %v", err)
	}
}

func TestFloodNoticesAndLines(t *testing.T) {
	r := start(t, "")
	var notices int
	r.mu.Lock()
	r.service = func(p protocol.ServiceCallParams) (any, error) {
		if p.Method == protocol.HostNotice {
			notices++ // the rig answers on its reader, in wire order
		}
		return struct{}{}, nil
	}
	r.mu.Unlock()
	if out := r.tool("n", "flood", `{"what":"notices","n":500}`); out.Text != "ok" {
		t.Errorf("flood notices = %+v", out)
	}
	if out := r.tool("l", "flood", `{"what":"lines","n":2,"bytes":100000}`); out.Text != "ok" {
		t.Errorf("flood lines = %+v", out)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if notices != 500 {
		t.Errorf("%d notices reached the host, want 500", notices)
	}
	if len(r.skipped) != 2 || r.skipped[0] != strings.Repeat("x", 512) {
		t.Errorf("skipped %d lines, want the 2 flooded", len(r.skipped))
	}
}

// Asked "endless", the model streams on after provider/cancel.
func TestEndlessModelIsDeafToCancel(t *testing.T) {
	r := start(t, "")
	r.conn.DispatchCall(t.Context(), protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "scripted", StreamID: "e", Request: sdk.ProviderRequest{
		Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "endless"}},
	}})
	waitDeltas := func(n int) {
		t.Helper()
		for limit := time.Now().Add(20 * time.Second); len(r.notesOf(protocol.NotifyProviderDelta)) < n; time.Sleep(time.Millisecond) {
			if time.Now().After(limit) {
				t.Fatalf("fewer than %d deltas", n)
			}
		}
	}
	waitDeltas(2)
	r.notify(protocol.NotifyProviderCancel, protocol.ProviderCancel{StreamID: "e"})
	waitDeltas(len(r.notesOf(protocol.NotifyProviderDelta)) + 2)
}
