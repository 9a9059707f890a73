package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// everything is a plugin with one of each kind, plus the test tools.
func everything(observed chan string, tools ...sdk.Tool) *Plugin {
	return &Plugin{
		Name:         "kit",
		Version:      "1.2.3",
		Tools:        tools,
		Commands:     []sdk.Command{command{}},
		Contributors: []sdk.Contributor{contributor{}},
		Compactors:   []sdk.Compactor{compactor{}},
		Providers:    []sdk.Provider{provider{}},
		Hooks:        []Hook{{Hook: hook{observed}, Decide: []string{"tool/before"}, Observe: []string{"tool/after", "turn/end"}}},
		Services:     []sdk.Service{service{}},
	}
}

func echoTool() sdk.Tool {
	return tool{"echo", func(_ context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(c.Input, &in); err != nil {
			return sdk.ToolOutput{}, err
		}
		for i := range 3 {
			ui.Progress(fmt.Sprintf("%s %d", c.ID, i))
		}
		return text(in.Text), nil
	}}
}

func TestInitializeDeclaresWhatIsRegistered(t *testing.T) {
	var got protocol.InitializeParams
	p := everything(nil, echoTool())
	p.Initialize = func(_ context.Context, ip protocol.InitializeParams) error {
		got = ip
		return nil
	}
	h := serve(t, p, true)
	params := protocol.InitializeParams{Protocol: protocol.Version, PluginRoot: "/root", Config: json.RawMessage(`{"a":1}`), Env: map[string]string{"K": "V"}}
	var res protocol.InitializeResult
	h.call(protocol.MethodInitialize, params, &res)

	want := protocol.InitializeResult{
		Protocol: protocol.Version, Name: "kit", Version: "1.2.3",
		Tools:        []sdk.ToolSpec{echoTool().Spec()},
		Commands:     []sdk.CommandSpec{command{}.Spec()},
		Contributors: []protocol.ContributorDecl{{ID: "ctx"}},
		Compactors:   []protocol.CompactorDecl{{ID: "keep-last"}},
		Providers:    []protocol.ProviderDecl{{ID: "scripted"}},
		Hooks:        []protocol.HookDecl{{ID: "guard", Decide: []string{"tool/before"}, Observe: []string{"tool/after", "turn/end"}}},
		Services:     []protocol.ServiceDecl{{Key: "test.echo"}},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("initialize =\n%+v\nwant\n%+v", res, want)
	}
	if got.PluginRoot != "/root" || string(got.Config) != `{"a":1}` || got.Env["K"] != "V" {
		t.Errorf("Initialize saw %+v", got)
	}
	if e := h.callErr(protocol.MethodInitialize, params); !strings.Contains(e.Message, "already initialized") {
		t.Errorf("second initialize: %v", e)
	}
}

func TestRequestBeforeInitializeIsRefused(t *testing.T) {
	h := serve(t, everything(nil, echoTool()), true)
	e := h.callErr(protocol.MethodToolCall, protocol.ToolCallParams{Name: "echo", Input: json.RawMessage(`{}`)})
	if e.Code != jsonrpc2.CodeInvalidRequest || !strings.Contains(e.Message, "before initialize") {
		t.Errorf("tool/call before initialize: %v", e)
	}
}

func TestFailedInitializeFailsTheHandshakeAndLaterRequests(t *testing.T) {
	p := everything(nil, echoTool())
	p.Initialize = func(context.Context, protocol.InitializeParams) error { return errors.New("bad config") }
	h := serve(t, p, true)
	if e := h.callErr(protocol.MethodInitialize, protocol.InitializeParams{}); !strings.Contains(e.Message, "bad config") {
		t.Errorf("initialize: %v", e)
	}
	if e := h.callErr(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet"}); !strings.Contains(e.Message, "bad config") {
		t.Errorf("command/run after a failed handshake: %v", e)
	}
}

func TestRequestsPipelinedBehindInitializeWaitForIt(t *testing.T) {
	release := make(chan struct{})
	p := everything(nil)
	p.Initialize = func(context.Context, protocol.InitializeParams) error { <-release; return nil }
	h := serve(t, p, true)
	initW, err := h.conn.DispatchCall(t.Context(), protocol.MethodInitialize, protocol.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	runW, err := h.conn.DispatchCall(t.Context(), protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet", Args: "x"})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	var res protocol.CommandRunResult
	if err := runW.Wait(t.Context(), &res); err != nil || res.Outcome.Text != "hello x in " {
		t.Errorf("command/run pipelined behind initialize = %+v, %v", res, err)
	}
	if err := initW.Wait(t.Context(), nil); err != nil {
		t.Error(err)
	}
}

func TestACallCancelledBeforeItStartsStillRuns(t *testing.T) {
	release := make(chan struct{})
	seen := tool{"seen", func(ctx context.Context, _ sdk.ToolCall, _ sdk.CallUI) (sdk.ToolOutput, error) {
		return text(fmt.Sprint("ran, ", ctx.Err())), nil
	}}
	p := everything(nil, seen)
	p.Initialize = func(context.Context, protocol.InitializeParams) error { <-release; return nil }
	h := serve(t, p, true)
	h.conn.DispatchCall(t.Context(), protocol.MethodInitialize, protocol.InitializeParams{})
	w, _ := h.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c", Name: "seen"})
	h.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "c"})
	// The cancel has been read once this answer is: notifications are
	// handled in order on the reader.
	h.callErr(protocol.MethodInitialize, protocol.InitializeParams{})
	close(release)
	var res protocol.ToolCallResult
	if err := w.Wait(t.Context(), &res); err != nil || res.Output.Text() != "ran, context canceled" {
		t.Errorf("a call cancelled before it started = %+v, %v; want the tool to run and answer", res, err)
	}
}

func TestToolCallSendsProgressBeforeItsResult(t *testing.T) {
	h := serve(t, everything(nil, echoTool()), false)
	var res protocol.ToolCallResult
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c1", Name: "echo", Input: json.RawMessage(`{"text":"hi"}`)}, &res)
	if res.Output.Text() != "hi" {
		t.Errorf("output = %+v", res.Output)
	}
	// Notifications are recorded on the host's reader, so those recorded
	// by now were read before the result.
	got := notesOf[protocol.ToolProgress](h, protocol.NotifyToolProgress)
	want := []protocol.ToolProgress{{CallID: "c1", Tail: "c1 0"}, {CallID: "c1", Tail: "c1 1"}, {CallID: "c1", Tail: "c1 2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %+v, want %+v", got, want)
	}
}

func TestProgressAfterTheAnswerIsDropped(t *testing.T) {
	uis := make(chan sdk.CallUI, 1)
	keep := tool{"keep", func(_ context.Context, _ sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
		uis <- ui
		return text("ok"), nil
	}}
	h := serve(t, everything(nil, keep, echoTool()), false)
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "k", Name: "keep"}, nil)
	(<-uis).Progress("too late")
	// Anything the late Progress wrote would be read before this answer.
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "e", Name: "echo", Input: json.RawMessage(`{}`)}, nil)
	for _, p := range notesOf[protocol.ToolProgress](h, protocol.NotifyToolProgress) {
		if p.CallID == "k" {
			t.Errorf("progress after the answer: %+v", p)
		}
	}
}

func TestToolCancelCancelsThatCallOnly(t *testing.T) {
	started := make(chan string, 2)
	block := tool{"block", func(ctx context.Context, c sdk.ToolCall, _ sdk.CallUI) (sdk.ToolOutput, error) {
		started <- c.ID
		<-ctx.Done()
		return text("cancelled " + c.ID), nil
	}}
	h := serve(t, everything(nil, block), false)
	w1, _ := h.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "one", Name: "block"})
	w2, _ := h.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "two", Name: "block"})
	<-started
	<-started
	// A blocked tool holds up nothing else.
	var run protocol.CommandRunResult
	h.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet", Args: "you", Cwd: "/w"}, &run)
	if run.Outcome.Text != "hello you in /w" {
		t.Errorf("command/run while a tool runs = %+v", run)
	}
	h.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "two"})
	var res protocol.ToolCallResult
	if err := w2.Wait(t.Context(), &res); err != nil || res.Output.Text() != "cancelled two" {
		t.Errorf("cancelled call = %+v, %v", res, err)
	}
	h.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "no-such-call"})
	h.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "one"})
	if err := w1.Wait(t.Context(), &res); err != nil || res.Output.Text() != "cancelled one" {
		t.Errorf("cancelled call = %+v, %v", res, err)
	}
}

func TestCommandRunAndComplete(t *testing.T) {
	h := serve(t, everything(nil), false)
	var run protocol.CommandRunResult
	h.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet", Args: "bob", Cwd: "/x"}, &run)
	if run.Outcome != (sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: "hello bob in /x"}) {
		t.Errorf("command/run = %+v", run)
	}
	var comp protocol.CommandCompleteResult
	h.call(protocol.MethodCommandComplete, protocol.CommandCompleteParams{Name: "greet", Partial: "g"}, &comp)
	if !reflect.DeepEqual(comp.Completions, []sdk.Completion{{Value: "gamma"}}) {
		t.Errorf("command/complete = %+v", comp)
	}
	var raw json.RawMessage
	h.call(protocol.MethodCommandComplete, protocol.CommandCompleteParams{Name: "greet", Partial: "z"}, &raw)
	if string(raw) != `{"completions":[]}` {
		t.Errorf("no completions = %s, want an empty list", raw)
	}
}

func TestContributeAndCompact(t *testing.T) {
	h := serve(t, everything(nil), false)
	var pieces protocol.ContextContributeResult
	h.call(protocol.MethodContextContribute, protocol.ContextContributeParams{ID: "ctx", Query: sdk.Query{Prompt: "p"}}, &pieces)
	if !reflect.DeepEqual(pieces.Pieces, []sdk.Piece{{Title: "t", Text: "prompt was: p"}}) {
		t.Errorf("context/contribute = %+v", pieces)
	}
	var raw json.RawMessage
	h.call(protocol.MethodContextContribute, protocol.ContextContributeParams{ID: "ctx"}, &raw)
	if string(raw) != `{"pieces":[]}` {
		t.Errorf("no pieces = %s, want an empty list", raw)
	}
	var comp protocol.CompactorCompactResult
	msgs := []sdk.Message{{Role: sdk.RoleUser, Content: "1"}, {Role: sdk.RoleAssistant, Content: "2"}}
	h.call(protocol.MethodCompactorCompact, protocol.CompactorCompactParams{ID: "keep-last", Context: msgs, Reason: "budget"}, &comp)
	if !reflect.DeepEqual(comp.Compaction, sdk.Compaction{Messages: msgs[1:], Summary: "kept 1 for budget"}) {
		t.Errorf("compactor/compact = %+v", comp)
	}
	e := h.callErr(protocol.MethodCompactorCompact, protocol.CompactorCompactParams{ID: "keep-last", Context: msgs, Reason: "fail"})
	if e.Code != jsonrpc2.CodeInternalError || e.Message != "cannot compact" {
		t.Errorf("a compactor's error = %+v", e)
	}
}

func TestProviderStreamSendsDeltasInOrderBeforeTheResult(t *testing.T) {
	h := serve(t, everything(nil), false)
	var res protocol.ProviderStreamResult
	h.call(protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "scripted", StreamID: "s1"}, &res)
	if res.End.StopReason != "end" {
		t.Errorf("provider/stream = %+v", res)
	}
	var got []string
	for _, d := range notesOf[protocol.ProviderDelta](h, protocol.NotifyProviderDelta) {
		if d.StreamID != "s1" {
			t.Errorf("delta on stream %q", d.StreamID)
		}
		got = append(got, d.Event.Text)
	}
	if strings.Join(got, "") != "abc" {
		t.Errorf("deltas before the result = %q, want a b c", got)
	}
}

func TestProviderCancelStopsThatStream(t *testing.T) {
	h := serve(t, everything(nil), false)
	w, _ := h.conn.DispatchCall(t.Context(), protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "scripted", StreamID: "s2", Request: sdk.ProviderRequest{Model: "wait"}})
	// The first delta says the stream is running: wait for it by
	// round-tripping requests until it has been read.
	for len(notesOf[protocol.ProviderDelta](h, protocol.NotifyProviderDelta)) == 0 {
		h.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet"}, nil)
	}
	h.notify(protocol.NotifyProviderCancel, protocol.ProviderCancel{StreamID: "s2"})
	err := w.Wait(t.Context(), nil)
	if rerr, ok := err.(*jsonrpc2.Error); !ok || rerr.Message != context.Canceled.Error() {
		t.Errorf("cancelled stream = %v, want the provider's error", err)
	}
}

func TestHookDecideAndObserveInOrder(t *testing.T) {
	observed := make(chan string)
	h := serve(t, everything(observed), false)
	var d protocol.HookDecideResult
	h.call(protocol.MethodHookDecide, protocol.HookDecideParams{ID: "guard", Site: "tool", Point: "before", Payload: json.RawMessage(`"no"`)}, &d)
	if d.Outcome != sdk.HookDeny || d.Reason != "said no at tool/before" {
		t.Errorf("hook/decide = %+v", d)
	}
	h.call(protocol.MethodHookDecide, protocol.HookDecideParams{ID: "guard", Payload: json.RawMessage(`"yes"`)}, &d)
	if d.Outcome != sdk.HookContinue {
		t.Errorf("hook/decide = %+v", d)
	}
	// observed is unbuffered: the first Observe blocks until read, and the
	// second must still come after it, and a request is not held up.
	h.notify(protocol.NotifyHookObserve, protocol.HookObserve{ID: "guard", Site: "tool", Point: "after", Payload: json.RawMessage(`1`)})
	h.notify(protocol.NotifyHookObserve, protocol.HookObserve{ID: "no-such-hook", Site: "x"})
	h.notify(protocol.NotifyHookObserve, protocol.HookObserve{ID: "guard", Site: "turn", Point: "end", Payload: json.RawMessage(`2`)})
	h.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet"}, nil)
	if a, b := <-observed, <-observed; a != "tool/after 1" || b != "turn/end 2" {
		t.Errorf("observed %q then %q", a, b)
	}
}

func TestServiceCall(t *testing.T) {
	h := serve(t, everything(nil), false)
	var res protocol.ServiceCallResult
	h.call(protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "test.echo", Method: "echo", Params: json.RawMessage(`{"x":[1,2]}`)}, &res)
	if string(res.Result) != `{"x":[1,2]}` {
		t.Errorf("service/call = %s", res.Result)
	}
	if e := h.callErr(protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "test.echo", Method: "nope"}); e.Message != "unknown method nope" {
		t.Errorf("a service's error = %v", e)
	}
	if e := h.callErr(protocol.MethodServiceCall, protocol.ServiceCallParams{Key: protocol.HostServiceKey, Method: "ask"}); !strings.Contains(e.Message, protocol.HostServiceKey) {
		t.Errorf("the host's key at the plugin = %v", e)
	}
}

// TestMethodsOfKindsNotHad: a plugin with only a tool does not have the
// methods of the kinds it has none of: they are MethodNotFound, as for any
// method it does not have, not an unknown name.
func TestMethodsOfKindsNotHad(t *testing.T) {
	h := serve(t, &Plugin{Name: "kit", Tools: []sdk.Tool{echoTool()}}, false)
	for _, m := range []string{
		protocol.MethodCommandRun, protocol.MethodCommandComplete, protocol.MethodContextContribute,
		protocol.MethodCompactorCompact, protocol.MethodProviderStream, protocol.MethodHookDecide, protocol.MethodServiceCall,
	} {
		want := fmt.Sprintf("kit: no method %q", m)
		if e := h.callErr(m, json.RawMessage(`{}`)); e.Code != jsonrpc2.CodeMethodNotFound || e.Message != want {
			t.Errorf("%s = %+v, want %d %q", m, e, jsonrpc2.CodeMethodNotFound, want)
		}
	}
	var out protocol.ToolCallResult
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c", Name: "echo", Input: json.RawMessage(`{"text":"hi"}`)}, &out)
	tools := serve(t, &Plugin{Name: "kit", Commands: []sdk.Command{command{}}}, false)
	if e := tools.callErr(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c", Name: "echo"}); e.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("tool/call to a plugin without tools = %+v", e)
	}
}

func TestUnknownMethodsAndNames(t *testing.T) {
	h := serve(t, everything(nil, echoTool()), false)
	if e := h.callErr("tool/teleport", nil); e.Code != jsonrpc2.CodeMethodNotFound || !strings.Contains(e.Message, "tool/teleport") {
		t.Errorf("unknown method = %+v", e)
	}
	for _, c := range []struct {
		method string
		params any
		name   string
	}{
		{protocol.MethodToolCall, protocol.ToolCallParams{Name: "nope-tool"}, "nope-tool"},
		{protocol.MethodCommandRun, protocol.CommandRunParams{Name: "nope-cmd"}, "nope-cmd"},
		{protocol.MethodCommandComplete, protocol.CommandCompleteParams{Name: "nope-cmd2"}, "nope-cmd2"},
		{protocol.MethodContextContribute, protocol.ContextContributeParams{ID: "nope-ctx"}, "nope-ctx"},
		{protocol.MethodCompactorCompact, protocol.CompactorCompactParams{ID: "nope-c"}, "nope-c"},
		{protocol.MethodProviderStream, protocol.ProviderStreamParams{ID: "nope-p"}, "nope-p"},
		{protocol.MethodHookDecide, protocol.HookDecideParams{ID: "nope-h"}, "nope-h"},
		{protocol.MethodServiceCall, protocol.ServiceCallParams{Key: "nope.key"}, "nope.key"},
	} {
		if e := h.callErr(c.method, c.params); e.Code != jsonrpc2.CodeInvalidParams || !strings.Contains(e.Message, `"`+c.name+`"`) {
			t.Errorf("%s of an unknown name = %+v", c.method, e)
		}
	}
	// Bad params are worded in the wire's terms, not encoding/json's (which
	// names Go types): a plugin in any language can say the same.
	for _, c := range []struct{ method, params, want string }{
		{protocol.MethodToolCall, `[1]`, "kit: bad params: params must be an object"},
		{protocol.MethodToolCall, `{"callId":"c","name":"echo","turn":"1"}`, "kit: bad params: turn must be an integer"},
		{protocol.MethodCommandRun, `{"name":"greet","args":5}`, "kit: bad params: args must be a string"},
		{protocol.MethodCommandComplete, `"greet"`, "kit: bad params: params must be an object"},
		{protocol.MethodContextContribute, `{"id":"ctx","query":[]}`, "kit: bad params: query must be an object"},
	} {
		if e := h.callErr(c.method, json.RawMessage(c.params)); e.Code != jsonrpc2.CodeInvalidParams || e.Message != c.want {
			t.Errorf("%s %s = %+v, want %q", c.method, c.params, e, c.want)
		}
	}
	// A notification the kit does not know is dropped, and the connection
	// goes on.
	h.notify("something/else", nil)
	h.call(protocol.MethodCommandRun, protocol.CommandRunParams{Name: "greet"}, nil)
}

func TestHandlerErrorIsTheMessage(t *testing.T) {
	fail := tool{"fail", func(context.Context, sdk.ToolCall, sdk.CallUI) (sdk.ToolOutput, error) {
		return sdk.ToolOutput{}, errors.New("boom")
	}}
	h := serve(t, everything(nil, fail), false)
	if e := h.callErr(protocol.MethodToolCall, protocol.ToolCallParams{Name: "fail"}); e.Code != jsonrpc2.CodeInternalError || e.Message != "boom" {
		t.Errorf("a tool's error = %+v", e)
	}
}

func TestAskAndNoticeReachTheHost(t *testing.T) {
	asker := tool{"ask", func(ctx context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
		a, err := ui.Ask(ctx, string(c.Input))
		if err != nil {
			return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(err.Error())}, IsError: true}, nil
		}
		if err := HostFrom(ctx).Notice(ctx, "info", "asked"); err != nil {
			return sdk.ToolOutput{}, err
		}
		return text(a), nil
	}}
	h := serve(t, everything(nil, asker), false)
	calls := make(chan protocol.ServiceCallParams, 2)
	h.service = func(p protocol.ServiceCallParams) (any, error) {
		calls <- p
		if p.Method == protocol.HostNotice {
			return nil, nil
		}
		var a protocol.AskParams
		json.Unmarshal(p.Params, &a)
		if a.Question == `"refuse"` {
			return nil, errors.New("not your call")
		}
		return protocol.AskResult{Answer: "yes to " + a.Question + " on " + a.Call}, nil
	}
	var res protocol.ToolCallResult
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c9", Name: "ask", Input: json.RawMessage(`"go?"`)}, &res)
	if res.Output.Text() != `yes to "go?" on c9` {
		t.Errorf("ask round trip = %+v", res.Output)
	}
	if a := <-calls; a.Key != protocol.HostServiceKey || a.Method != protocol.HostAsk {
		t.Errorf("ask went to %s %s", a.Key, a.Method)
	}
	n := <-calls
	var np protocol.NoticeParams
	json.Unmarshal(n.Params, &np)
	if n.Key != protocol.HostServiceKey || n.Method != protocol.HostNotice || np != (protocol.NoticeParams{Level: "info", Message: "asked"}) {
		t.Errorf("notice = %+v %+v", n, np)
	}
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{CallID: "c10", Name: "ask", Input: json.RawMessage(`"refuse"`)}, &res)
	if !res.Output.IsError || res.Output.Text() != "not your call" {
		t.Errorf("a refused ask = %+v", res.Output)
	}
}

func TestHostOutsideAHandler(t *testing.T) {
	h := HostFrom(context.Background())
	if h != nil {
		t.Fatal("a host outside a handler")
	}
	if err := h.Notice(context.Background(), "info", "x"); !errors.Is(err, ErrNoHost) {
		t.Errorf("Notice on no host = %v", err)
	}
	if h.Done() != nil {
		t.Error("Done on no host")
	}
	h.Exit(nil) // does nothing, and does not panic
}

func TestBigOutputIsOneLine(t *testing.T) {
	big := tool{"big", func(context.Context, sdk.ToolCall, sdk.CallUI) (sdk.ToolOutput, error) {
		return text(strings.Repeat("x", 200_000)), nil
	}}
	h := serve(t, everything(nil, big), false)
	var res protocol.ToolCallResult
	h.call(protocol.MethodToolCall, protocol.ToolCallParams{Name: "big"}, &res)
	if len(res.Output.Text()) != 200_000 {
		t.Errorf("big output is %d bytes", len(res.Output.Text()))
	}
}

// hangTool ignores its call's cancel, as a badly behaved tool does, but
// not the instance's end.
func hangTool(started chan<- struct{}) sdk.Tool {
	return tool{"hang", func(ctx context.Context, _ sdk.ToolCall, _ sdk.CallUI) (sdk.ToolOutput, error) {
		close(started)
		<-HostFrom(ctx).Done()
		return text("never sent"), nil
	}}
}

func TestStdinEndingEndsServeWithAToolRunning(t *testing.T) {
	started := make(chan struct{})
	h := serve(t, everything(nil, hangTool(started)), false)
	w, _ := h.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{CallID: "h", Name: "hang"})
	<-started
	h.notify(protocol.NotifyToolCancel, protocol.ToolCancel{CallID: "h"}) // ignored
	h.conn.Close()                                                        // stdin ends
	if err := <-h.served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	h.served <- nil
	if err := w.Wait(t.Context(), nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("the hung call = %v, want no answer", err)
	}
}

func TestCancellingCtxStopsServe(t *testing.T) {
	started := make(chan struct{})
	p := everything(nil, hangTool(started))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	defer outR.Close()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, inR, outW) }()
	go io.Copy(io.Discard, outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tool/call","params":{"name":"hang"}}`)
	<-started
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after cancel = %v", err)
	}
	// Serve closed stdin to end its read.
	if _, err := inW.Write([]byte("\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("writing stdin after Serve = %v, want a closed pipe", err)
	}
}

func TestExitEndsServeWithoutAnswering(t *testing.T) {
	quit := errors.New("quit 7")
	exit := tool{"exit", func(ctx context.Context, _ sdk.ToolCall, _ sdk.CallUI) (sdk.ToolOutput, error) {
		HostFrom(ctx).Exit(quit)
		return text("must not be sent"), nil
	}}
	started := make(chan struct{})
	h := serve(t, everything(nil, exit, hangTool(started)), false)
	w, _ := h.conn.DispatchCall(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{Name: "hang"})
	<-started
	err := h.conn.Call(t.Context(), protocol.MethodToolCall, protocol.ToolCallParams{Name: "exit"}, nil)
	if !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("the exit call = %v, want no answer", err)
	}
	if err := w.Wait(t.Context(), nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("the hung call = %v, want no answer", err)
	}
	if err := <-h.served; err != quit {
		t.Errorf("Serve = %v, want %v", err, quit)
	}
	h.served <- nil // the cleanup's check
	for len(h.responses) > 0 {
		if r := <-h.responses; r.ID.Num != 0 { // 0 is initialize's
			t.Errorf("a response after Exit: %+v", r)
		}
	}
}

func TestServeRefusesABadPlugin(t *testing.T) {
	for name, p := range map[string]*Plugin{
		"no name":       {},
		"nil tool":      {Name: "x", Tools: []sdk.Tool{nil}},
		"two tools":     {Name: "x", Tools: []sdk.Tool{echoTool(), echoTool()}},
		"empty tool":    {Name: "x", Tools: []sdk.Tool{tool{name: ""}}},
		"two commands":  {Name: "x", Commands: []sdk.Command{command{}, command{}}},
		"two ctx":       {Name: "x", Contributors: []sdk.Contributor{contributor{}, contributor{}}},
		"two compactor": {Name: "x", Compactors: []sdk.Compactor{compactor{}, compactor{}}},
		"two providers": {Name: "x", Providers: []sdk.Provider{provider{}, provider{}}},
		"nil hook":      {Name: "x", Hooks: []Hook{{}}},
		"two hooks":     {Name: "x", Hooks: []Hook{{Hook: hook{}}, {Hook: hook{}}}},
		"two services":  {Name: "x", Services: []sdk.Service{service{}, service{}}},
		"host's key":    {Name: "x", Services: []sdk.Service{hostKeyService{}}},
	} {
		// Nothing is read: a reader that fails the test if it is.
		if err := p.Serve(t.Context(), failReader{t}, io.Discard); err == nil {
			t.Errorf("%s: Serve accepted it", name)
		}
	}
}

type hostKeyService struct{ service }

func (hostKeyService) Key() string { return protocol.HostServiceKey }

type failReader struct{ t *testing.T }

func (r failReader) Read([]byte) (int, error) {
	r.t.Error("a refused plugin read stdin")
	return 0, io.EOF
}
