package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Tools: every MCP tool is declared under the plugin's name, whatever the
// server calls itself; a name the host cannot offer is made one it can;
// inputSchema passes through; annotations are said as the tool's claims
// and never believed.
func TestToolsDeclared(t *testing.T) {
	r := newRig(t, rigOpts{})
	decl, _ := r.p.Declaration()
	if decl.Name != "fault" || decl.Version != "9.9.9" {
		t.Errorf("declared %s %s, want fault (the manifest's name) 9.9.9 (the server's version)", decl.Name, decl.Version)
	}
	var names []string
	for _, tl := range r.p.Contributions().Tools {
		names = append(names, tl.Spec().Name)
		if tl.Traits() != (sdk.ToolTraits{}) {
			t.Errorf("%s wears %+v, want the untrusted default", tl.Spec().Name, tl.Traits())
		}
	}
	for _, want := range []string{"plugin__fault__echo", "plugin__fault__dotted_name", "plugin__fault__annotated"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	spec := r.tool("annotated").Spec()
	if spec.Claims != `title "Safe", read-only, not destructive, idempotent, closed-world` || spec.Description != "Claims everything." {
		t.Errorf("claims %q, description %q: want the annotations said, the description as it is", spec.Claims, spec.Description)
	}
	if string(spec.InputSchema) != `{"type":"object"}` {
		t.Errorf("inputSchema %s, want the server's", spec.InputSchema)
	}
	if out, err := r.call(context.Background(), "dotted_name", `{}`, nil); err != nil || texts(out) != "dotted" {
		t.Errorf("dotted_name = %q, %v; want the MCP tool dotted.name", texts(out), err)
	}
	if !strings.Contains(r.log.String(), `mcpbridge: MCP server "mcpfault-server" version "9.9.9", protocol `) {
		t.Errorf("the log does not say what the server said it is:\n%s", r.log)
	}
}

// Results: every content kind is one part, isError is kept, structured
// content is the person's view.
func TestToolResults(t *testing.T) {
	r := newRig(t, rigOpts{})
	out, err := r.call(context.Background(), "contents", `{}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "plain|[image: image/png, 5 bytes]|[audio: audio/wav, 3 bytes]|[resource link: file:///a.txt (a), text/plain] the a file|" +
		"[resource mem://t]\nembedded text|[resource mem://b: application/octet-stream, 2 bytes]"
	if got := texts(out); got != want {
		t.Errorf("parts:\n got %q\nwant %q", got, want)
	}
	wantView := &sdk.View{Kind: sdk.ViewKeyValue, Title: "structured content", Pairs: []sdk.KeyValue{{Key: "n", Value: "3"}, {Key: "s", Value: "three"}}}
	if !reflect.DeepEqual(out.Display, wantView) {
		t.Errorf("display %+v, want %+v", out.Display, wantView)
	}
	if out.IsError {
		t.Error("contents is no error")
	}
	out, err = r.call(context.Background(), "fail", `{}`, nil)
	if err != nil || !out.IsError || texts(out) != "it failed" {
		t.Errorf("fail = %+v, %v; want isError with its text", out, err)
	}
	out, err = r.call(context.Background(), "echo", `{"text":"hi"}`, nil)
	if err != nil || texts(out) != "hi" {
		t.Errorf("echo = %q, %v; want the input passed through", texts(out), err)
	}
}

// Progress without a message shows progress/total.
func TestProgress(t *testing.T) {
	r := newRig(t, rigOpts{})
	u := &testutil.RecordingUI{}
	if _, err := r.call(context.Background(), "progress", `{}`, u); err != nil {
		t.Fatal(err)
	}
	if progress, _ := u.Seen(); !reflect.DeepEqual(progress, []string{"1/2", "2/2"}) {
		t.Errorf("progress %q, want 1/2, 2/2 (before the answer)", progress)
	}
}

// An interrupt is tool/cancel, which cancels the sdk's call: the server
// hears notifications/cancelled, and the host still gets an answer.
func TestCancel(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	out, err := r.call(ctx, "hang", `{}`, nil)
	if err != nil {
		t.Fatalf("a cancelled call still answers: %v", err)
	}
	if !out.IsError || !strings.Contains(texts(out), "notifications/cancelled") {
		t.Errorf("answer %+v, want the cancellation said", out)
	}
	r.log.WaitFor(t, "mcp hang info: hang cancelled")
}

// Logging lines go to the log; the first at error level is one notice.
func TestLogging(t *testing.T) {
	r := newRig(t, rigOpts{})
	if _, err := r.call(context.Background(), "flood", `{"n":50,"size":10}`, nil); err != nil {
		t.Fatal(err)
	}
	r.log.WaitFor(t, "mcp flood error: 49 xxxxxxxxxx\n")
	n := r.notices.Next(t)
	want := bridge.Notice{Plugin: "fault", Level: "error", Message: "the MCP server logged error: 0 xxxxxxxxxx (later errors go to its log only)"}
	if n != want {
		t.Errorf("notice %+v, want %+v", n, want)
	}
	if _, err := r.call(context.Background(), "flood", `{"n":5,"size":1}`, nil); err != nil {
		t.Fatal(err)
	}
	r.log.WaitFor(t, "mcp flood error: 4 x\n")
	if all := r.notices.All(); len(all) != 1 {
		t.Errorf("notices %v, want the one", all)
	}
}

// One huge log message is cut at maxLogMessage in the plugin log.
func TestLogMessageIsCut(t *testing.T) {
	r := newRig(t, rigOpts{})
	if _, err := r.call(context.Background(), "flood", `{"n":1,"size":1000000}`, nil); err != nil {
		t.Fatal(err)
	}
	r.log.WaitFor(t, fmt.Sprintf("… (%d bytes more)\n", 1000000+2-64<<10)) // "0 " and the line, less maxLogMessage
	if got := len(r.log.String()); got > 2*64<<10 {
		t.Errorf("the log holds %d bytes", got)
	}
}

// Elicitation is the host's ask, on the call the server is answering; an
// empty answer declines.
func TestElicitation(t *testing.T) {
	r := newRig(t, rigOpts{})
	u := &testutil.RecordingUI{Answer: "Ann"}
	out, err := r.call(context.Background(), "ask", `{}`, u)
	if err != nil || texts(out) != "hello Ann" {
		t.Fatalf("ask = %q, %v; want hello Ann", texts(out), err)
	}
	if _, asked := u.Seen(); !reflect.DeepEqual(asked, []string{"What is your name? (name (string; optional): your name) — an empty answer declines"}) {
		t.Errorf("questions %q", asked)
	}
	out, err = r.call(context.Background(), "ask", `{}`, &testutil.RecordingUI{})
	if err != nil || texts(out) != "ask: decline" {
		t.Errorf("ask unanswered = %q, %v; want a decline", texts(out), err)
	}
	// With no one to ask, the server hears cancel (no choice was made),
	// not an error carrying bingo's own words; the log says why.
	out, err = r.call(context.Background(), "ask", `{}`, &testutil.RecordingUI{Err: errors.New("there is no one to ask")})
	if err != nil || texts(out) != "ask: cancel" {
		t.Errorf("ask with no one to ask = %q, %v; want a cancel", texts(out), err)
	}
	r.log.WaitFor(t, "mcpbridge: elicitation answered cancel: no one could be asked: ")
}

// A form is shown whole, then filled in field by field, an invalid answer
// asked again saying what was wrong; the defaults fill in what the person
// left empty, and the server gets what its schema asks for.
func TestElicitationForm(t *testing.T) {
	r := newRig(t, rigOpts{})
	u := &testutil.RecordingUI{Answers: []string{"y", "purple", "", "0", "2", "", "Large"}}
	out, err := r.call(context.Background(), "form", `{}`, u)
	if want := `form: accept {"colour":"green","count":2,"gift":false,"size":"l"}`; err != nil || texts(out) != want {
		t.Fatalf("form = %q, %v; want %q", texts(out), err, want)
	}
	_, asked := u.Seen()
	want := []string{
		"Order a shirt.\nFields: colour (one of red, green, blue; optional; default green); count (integer; required): how many; " +
			"gift (yes or no; optional; default no); size (one of s \"Small\", l \"Large\"; required) — answer y to fill them in; an empty answer declines",
		"colour (one of red, green, blue; optional; default green) — an empty answer takes the default",
		"\"purple\" is not one of red, green, blue — asked again (2 of 3):\ncolour (one of red, green, blue; optional; default green) — an empty answer takes the default",
		"count (integer; required): how many — an empty answer is asked again",
		"0 is less than 1, the least allowed — asked again (2 of 3):\ncount (integer; required): how many — an empty answer is asked again",
		"gift (yes or no; optional; default no) — an empty answer takes the default",
		"size (one of s \"Small\", l \"Large\"; required) — an empty answer is asked again",
	}
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("questions:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
	out, err = r.call(context.Background(), "form", `{}`, &testutil.RecordingUI{Answers: []string{"y", "red", "x", "y", "z"}})
	if err != nil || texts(out) != "form: decline null" {
		t.Errorf("form never answered validly = %q, %v; want a decline", texts(out), err)
	}
	r.log.WaitFor(t, `mcpbridge: elicitation answered decline: 3 answers were not valid, the last: "z" is not a whole number`+"\n")
}

// A request the server sends outside any of its calls is declined, and
// no one is asked: on protocol 2026-07-28 a server asks only as part of a
// call's result, so one sent on its own while a call runs is not that
// call's (bingo once asked it on the oldest call running).
func TestElicitationOutsideACall(t *testing.T) {
	r := newRig(t, rigOpts{})
	u := &testutil.RecordingUI{Answer: "Ann"}
	out, err := r.call(context.Background(), "outside", `{}`, u)
	if err != nil || texts(out) != `outside: {"action":"decline"}` {
		t.Fatalf("outside = %q, %v; want a decline", texts(out), err)
	}
	if _, asked := u.Seen(); len(asked) > 0 {
		t.Errorf("the person was asked %q", asked)
	}
	r.log.WaitFor(t, "mcpbridge: elicitation answered decline: it was sent outside any of the server's tool calls (protocol 2026-07-28 asks only in a call's result)\n")
}

// An elicitation's message is capped and squeezed before bingo adds its
// own words, so those (the fields, how to decline) always reach the person.
func TestElicitationIsCapped(t *testing.T) {
	r := newRig(t, rigOpts{})
	message := strings.Repeat(" ", 7200) + "bingo: paste your key:" + strings.Repeat("\nmore", 30) + strings.Repeat("x", 2000)
	in, _ := json.Marshal(map[string]string{"message": message})
	u := &testutil.RecordingUI{Answer: "Ann"}
	if _, err := r.call(context.Background(), "ask", string(in), u); err != nil {
		t.Fatal(err)
	}
	_, asked := u.Seen()
	if len(asked) != 1 {
		t.Fatalf("questions %q", asked)
	}
	q := asked[0]
	if lines := strings.Split(q, "\n"); len(lines) > 9 || len([]rune(q)) > 950 || !strings.HasPrefix(q, "bingo: paste your key:\nmore") ||
		!strings.HasSuffix(q, "… (name (string; optional): your name) — an empty answer declines") {
		t.Errorf("question (%d lines, %d characters):\n%s", len(lines), len([]rune(q)), q)
	}
}

// Sampling is refused unless allowed; allowed, it goes to Config.Sample.
func TestSampling(t *testing.T) {
	r := newRig(t, rigOpts{})
	if out, err := r.call(context.Background(), "sample", `{}`, nil); err == nil {
		t.Errorf("sampling not allowed, but the call answered %q", texts(out))
	}

	var got []mcpbridge.SampleRequest
	r = newRig(t, rigOpts{cfg: mcpbridge.Config{Sample: func(_ context.Context, req mcpbridge.SampleRequest) (mcpbridge.SampleResult, error) {
		got = append(got, req)
		return mcpbridge.SampleResult{Text: "hi there", Model: "m-1"}, nil
	}}})
	out, err := r.call(context.Background(), "sample", `{}`, nil)
	if err != nil || texts(out) != "model said: hi there (model m-1)" {
		t.Fatalf("sample = %q, %v", texts(out), err)
	}
	want := []mcpbridge.SampleRequest{{System: "be brief", MaxTokens: 50, Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "say hi"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sample got %+v, want %+v", got, want)
	}
}

// One tool call's sampling is bounded: at most MaxSamples requests reach
// the provider, however many the server asks at once, each held to
// MaxTokens, and one notice says the bound stopped it.
func TestSamplingBound(t *testing.T) {
	var mu sync.Mutex
	var got []int
	r := newRig(t, rigOpts{cfg: mcpbridge.Config{MaxSamples: 3, MaxTokens: 100, Sample: func(_ context.Context, req mcpbridge.SampleRequest) (mcpbridge.SampleResult, error) {
		mu.Lock()
		got = append(got, req.MaxTokens)
		mu.Unlock()
		return mcpbridge.SampleResult{Text: "hi", Model: "m"}, nil
	}}})
	out, err := r.call(context.Background(), "sample", `{"n": 50, "maxTokens": 100000}`, nil)
	if err == nil {
		t.Errorf("50 samples in one call answered %q", texts(out))
	}
	mu.Lock()
	if len(got) > 3 || len(got) == 0 || slices.ContainsFunc(got, func(n int) bool { return n != 100 }) {
		t.Errorf("the provider got requests of %v tokens; want at most 3, each of 100", got)
	}
	mu.Unlock()
	if n := r.notices.Next(t); !strings.Contains(n.Message, "asked the model more than 3 times (turn.maxSteps) while answering one call of its tool sample") {
		t.Errorf("notice %q", n.Message)
	}
	// The next call has its own bound.
	if out, err := r.call(context.Background(), "sample", `{"n": 3}`, nil); err != nil || texts(out) != "the model answered 3 times" {
		t.Errorf("3 samples in a new call = %q, %v", texts(out), err)
	}
}

// Prompts are commands: arguments by position or name=value, the messages
// the model's prompt, a missing required argument the usage; completion
// is completion/complete on the argument being typed.
func TestPrompts(t *testing.T) {
	r := newRig(t, rigOpts{})
	c := r.command("greet")
	if spec := c.Spec(); spec.Args != (sdk.CommandArgs{Kind: sdk.ArgsFree, Hint: "<name> [mood]"}) || spec.Hint != "Greet someone." {
		t.Errorf("spec %+v", spec)
	}
	for _, tc := range []struct{ args, want string }{
		{"Ann happy", "Greet Ann (happy).\n\nSure."},
		{"mood=sad Bob", "Greet Bob (sad).\n\nSure."},
		{"Ann very happy", "Greet Ann (very happy).\n\nSure."},
	} {
		o, err := c.Run(context.Background(), sdk.CommandRun{Name: "greet", Args: tc.args})
		if err != nil || o.Kind != sdk.OutcomePrompt || o.Prompt != tc.want {
			t.Errorf("/greet %s = %+v, %v; want prompt %q", tc.args, o, err, tc.want)
		}
	}
	o, err := c.Run(context.Background(), sdk.CommandRun{Name: "greet", Args: ""})
	if err != nil || o.Kind != sdk.OutcomeError || o.Message != "missing name; usage: /greet <name> [mood]" {
		t.Errorf("/greet = %+v, %v; want the usage", o, err)
	}
	for _, tc := range []struct {
		partial string
		want    []string
	}{
		{"Ann h", []string{"Ann happy", "Ann hungry"}},
		{"Ann mood=s", []string{"Ann mood=sad"}},
		{"An", nil}, // the name: the server completes nothing
	} {
		cs, err := c.Complete(context.Background(), sdk.CompleteRequest{Name: "greet", Partial: tc.partial})
		var got []string
		for _, x := range cs {
			got = append(got, x.Value)
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("complete %q = %q, %v; want %q", tc.partial, got, err, tc.want)
		}
	}
}

// Resources are a contributor only when enabled: the text ones, within
// the budget.
func TestResources(t *testing.T) {
	r := newRig(t, rigOpts{})
	if cs := r.p.Contributions().Contributors; len(cs) != 0 {
		t.Fatalf("resources not enabled, but contributors %v", cs)
	}
	r = newRig(t, rigOpts{cfg: mcpbridge.Config{Resources: true}})
	cs := r.p.Contributions().Contributors
	if len(cs) != 1 || cs[0].ID() != mcpbridge.ContributorID {
		t.Fatalf("contributors %v, want resources", cs)
	}
	pieces, err := cs[0].Contribute(context.Background(), sdk.Query{Budget: 1000})
	want := []sdk.Piece{{Title: "one (mem://one)", Text: "the first resource"}, {Title: "two (mem://two)", Text: "the second resource"}}
	if err != nil || !reflect.DeepEqual(pieces, want) {
		t.Errorf("pieces %+v, %v; want %+v", pieces, err, want)
	}
	pieces, err = cs[0].Contribute(context.Background(), sdk.Query{Budget: 22})
	want = []sdk.Piece{{Title: "one (mem://one)", Text: "the first resource"}, {Title: "two (mem://two)", Text: "the "}}
	if err != nil || !reflect.DeepEqual(pieces, want) {
		t.Errorf("within a budget of 22: %+v, %v; want %+v", pieces, err, want)
	}
}

// tools/list_changed is plugin/declare: the bridge keeps the new
// declaration, tells Redeclared, and the new tool runs.
func TestListChanged(t *testing.T) {
	redecl := testutil.NewCollector[protocol.InitializeResult]()
	r := newRig(t, rigOpts{redecl: redecl.Add})
	if _, err := r.call(context.Background(), "change", `{}`, nil); err != nil {
		t.Fatal(err)
	}
	d := redecl.Next(t)
	if !slices.ContainsFunc(d.Tools, func(s sdk.ToolSpec) bool { return s.Name == "added" }) {
		t.Fatalf("redeclared %+v, want the tool added", d.Tools)
	}
	if out, err := r.call(context.Background(), "added", `{}`, nil); err != nil || texts(out) != "added ran" {
		t.Errorf("added = %q, %v", texts(out), err)
	}
}

// The person's plugins.<name> slice is the client's experimental "bingo"
// capability; with none, the capability has no config (never a null).
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		config json.RawMessage
		want   string
	}{{nil, "absent"}, {json.RawMessage(`{"k":[1,"v"]}`), `{"k":[1,"v"]}`}} {
		r := newRig(t, rigOpts{config: tc.config})
		if out, err := r.call(context.Background(), "config", `{}`, nil); err != nil || texts(out) != tc.want {
			t.Errorf("config %s reached the server as %q, %v", tc.config, texts(out), err)
		}
	}
}

// The working directory is the one root: declared as the roots capability
// and listed as its file:// URI. With none to offer, none is declared.
func TestRoots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a project")
	for _, tc := range []struct{ root, want string }{
		{dir, "capability true; file://" + strings.ReplaceAll(filepath.ToSlash(dir), " ", "%20") + " (a project)"},
		{"", "capability false;"},
	} {
		r := newRig(t, rigOpts{cfg: mcpbridge.Config{Root: tc.root}})
		if out, err := r.call(context.Background(), "roots", `{}`, nil); err != nil || texts(out) != tc.want {
			t.Errorf("root %q: the server was offered %q, %v; want %q", tc.root, texts(out), err, tc.want)
		}
	}
}

// A server that dies mid-call is a death like any plugin's: one notice,
// and the next call starts it again.
func TestCrash(t *testing.T) {
	r := newRig(t, rigOpts{})
	if _, err := r.call(context.Background(), "crash", `{}`, nil); err == nil {
		t.Fatal("a call whose server died answered")
	}
	n := r.notices.Next(t)
	if !strings.Contains(n.Message, "stopped (exit status 3)") {
		t.Errorf("notice %+v, want the death with the server's exit", n)
	}
	if out, err := r.call(context.Background(), "echo", `{"text":"again"}`, nil); err != nil || texts(out) != "again" {
		t.Errorf("after the death: %q, %v", texts(out), err)
	}
	if r.starts != 2 {
		t.Errorf("%d starts, want 2", r.starts)
	}
	if all := r.notices.All(); len(all) != 1 {
		t.Errorf("notices %v, want one", all)
	}
}

// A line on the server's stdout that is not a JSON-RPC message goes to the
// log and is skipped: the call answers, the session goes on, and nothing
// is said to the person.
func TestStrayLines(t *testing.T) {
	r := newRig(t, rigOpts{})
	if out, err := r.call(context.Background(), "junk", `{}`, nil); err != nil || texts(out) != "printed junk" {
		t.Fatalf("junk = %q, %v", texts(out), err)
	}
	if out, err := r.call(context.Background(), "echo", `{"text":"still here"}`, nil); err != nil || texts(out) != "still here" {
		t.Fatalf("echo after junk = %q, %v", texts(out), err)
	}
	for _, want := range []string{`"THIS IS NOT JSON"`, `"{\"not\": \"a message\"}"`} {
		if !strings.Contains(r.log.String(), "mcpbridge: skipped a line on the server's stdout (not a JSON-RPC message: ") || !strings.Contains(r.log.String(), want) {
			t.Errorf("the log does not say %s was skipped:\n%s", want, r.log)
		}
	}
	if n := r.notices.All(); len(n) != 0 || r.starts != 1 {
		t.Errorf("notices %v, %d starts: want none, and one start", n, r.starts)
	}
}

// With Trace, every line of the MCP wire is written to the log, both
// ways, stamped; without it, none is.
func TestTrace(t *testing.T) {
	for _, trace := range []bool{false, true} {
		r := newRig(t, rigOpts{cfg: mcpbridge.Config{Trace: trace}})
		if out, err := r.call(context.Background(), "echo", `{"text":"traced"}`, nil); err != nil || texts(out) != "traced" {
			t.Fatalf("echo = %q, %v", texts(out), err)
		}
		sent := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+ mcp -> \{"jsonrpc":"2.0","id":\d+,"method":"tools/call","params":\{.*"name":"echo".*\}$`)
		got := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+ mcp <- \{"jsonrpc":"2.0","id":\d+,"result":\{.*"content":\[\{"type":"text","text":"traced"\}\].*\}$`)
		log := r.log.String()
		if sent.MatchString(log) != trace || got.MatchString(log) != trace {
			t.Errorf("trace %v: the log:\n%s", trace, log)
		}
	}
}
