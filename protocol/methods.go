package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Direction says which side sends a method, as the spec's tables spell it.
type Direction string

const (
	HostToPlugin Direction = "host→plugin"
	PluginToHost Direction = "plugin→host"
	BothWays     Direction = "both"
)

// Sends reports whether a sender on side from (HostToPlugin for the host,
// PluginToHost for a plugin) may send a method of direction d.
func (d Direction) Sends(from Direction) bool { return d == BothWays || d == from }

// Method is one row of the spec's tables: a request (Result non-nil) or a
// notification (Result nil). Params and Result are zero values of the Go
// types that travel. These tables are the one description of the wire:
// schema/plugin.json is generated from them, and Check, the bridge and
// `bingo plugins check` hold what crosses to them.
type Method struct {
	Name      string
	Direction Direction
	About     string
	Params    any
	Result    any
}

// Requests is the spec's method table, in its order.
func Requests() []Method {
	return []Method{
		{MethodInitialize, HostToPlugin, "The handshake. The plugin answers with what it is and everything it contributes; a protocol the host does not speak is refused.",
			InitializeParams{}, InitializeResult{}},
		{MethodToolCall, HostToPlugin, "Run a tool. The plugin may send tool/progress for the call while it runs.",
			ToolCallParams{}, ToolCallResult{}},
		{MethodCommandRun, HostToPlugin, "Run a slash command.",
			CommandRunParams{}, CommandRunResult{}},
		{MethodCommandComplete, HostToPlugin, "Complete a command's partial arguments.",
			CommandCompleteParams{}, CommandCompleteResult{}},
		{MethodContextContribute, HostToPlugin, "Ask a context contributor for pieces of the model's context.",
			ContextContributeParams{}, ContextContributeResult{}},
		{MethodCompactorCompact, HostToPlugin, "Ask a compactor to shorten a conversation.",
			CompactorCompactParams{}, CompactorCompactResult{}},
		{MethodProviderStream, HostToPlugin, "One model response, streamed back as provider/delta notifications; the result ends the stream.",
			ProviderStreamParams{}, ProviderStreamResult{}},
		{MethodHookDecide, HostToPlugin, "Ask a hook to decide at a decision point.",
			HookDecideParams{}, HookDecideResult{}},
		{MethodServiceCall, BothWays, "Call a service method. Key bingo.host is the host's own service (see hostService).",
			ServiceCallParams{}, ServiceCallResult{}},
	}
}

// Notifications is the spec's notification table, in its order.
func Notifications() []Method {
	return []Method{
		{NotifyToolProgress, PluginToHost, "The call's live output line.", ToolProgress{}, nil},
		{NotifyToolCancel, HostToPlugin, "The turn was interrupted. The host still waits for the call's answer until its deadline.", ToolCancel{}, nil},
		{NotifyProviderDelta, PluginToHost, "One chunk of a streamed response.", ProviderDelta{}, nil},
		{NotifyProviderCancel, HostToPlugin, "Stop streaming.", ProviderCancel{}, nil},
		{NotifyHookObserve, HostToPlugin, "An observation point; nothing waits on it.", HookObserve{}, nil},
		{NotifyPluginDeclare, PluginToHost, "What the plugin offers changed: its whole declaration again, held to the handshake's rules; what the host keeps replaces what the plugin contributed.", InitializeResult{}, nil},
	}
}

// HostMethods are the doors of the reserved service bingo.host (params of
// a service/call whose key is HostServiceKey). Result nil means the answer
// carries nothing the plugin should read.
func HostMethods() []Method {
	return []Method{
		{HostAsk, PluginToHost, "Put a question to the person, on a callId the plugin is running now. A call that has ended, or is not the plugin's, is refused.",
			AskParams{}, AskResult{}},
		{HostNotice, PluginToHost, "Say one line under the plugin's own name, at any time.",
			NoticeParams{}, nil},
	}
}

// find returns the method of ms named name.
func find(ms []Method, name string) (Method, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
}

// Union describes one tagged union of sdk: which of the type's fields each
// value of its tag uses. Fields in Common go with every kind. Check holds a
// value of the type to it; the schema states it as one if/then per kind.
type Union struct {
	Type   reflect.Type
	Tag    string
	Common []string
	Kinds  []UnionKind
}

// UnionKind is one value of a union's tag: the fields that go with it, and
// those of them it requires.
type UnionKind struct {
	Value    string
	Fields   []string
	Required []string
}

// Unions places every field of sdk's tagged unions, following the comments
// on their kind constants.
func Unions() []Union {
	return []Union{
		{Type: reflect.TypeFor[sdk.View](), Tag: "kind", Common: []string{"title"}, Kinds: []UnionKind{
			{Value: "text", Fields: []string{"text"}},
			{Value: "table", Fields: []string{"columns", "rows"}},
			{Value: "list", Fields: []string{"items"}},
			{Value: "keyValue", Fields: []string{"pairs"}},
			{Value: "stack", Fields: []string{"views"}},
		}},
		{Type: reflect.TypeFor[sdk.CommandOutcome](), Tag: "kind", Kinds: []UnionKind{
			{Value: "view", Fields: []string{"view"}, Required: []string{"view"}},
			{Value: "text", Fields: []string{"text"}},
			{Value: "prompt", Fields: []string{"prompt"}},
			{Value: "error", Fields: []string{"message"}},
			{Value: "none"},
		}},
		{Type: reflect.TypeFor[sdk.StreamEvent](), Tag: "kind", Kinds: []UnionKind{
			{Value: "text", Fields: []string{"text"}},
			{Value: "toolCall", Fields: []string{"toolCall"}, Required: []string{"toolCall"}},
		}},
	}
}

// unionOf returns the union t is, if it is one.
func unionOf(t reflect.Type) (Union, bool) {
	for _, u := range unionTable {
		if u.Type == t {
			return u, true
		}
	}
	return Union{}, false
}

var unionTable = Unions()

// Wrapper is the one key a request's result holds its answer under
// ("output" for tool/call), or "" for a notification.
func (m Method) Wrapper() string {
	if m.Result == nil {
		return ""
	}
	fs := fieldsOf(reflect.TypeOf(m.Result))
	if len(fs) != 1 {
		return ""
	}
	return fs[0].name
}

// envelope is a JSON-RPC 2.0 message, every key it may have: which of them
// a message holds says what it is.
type envelope struct {
	JSONRPC string          `json:"jsonrpc" jsonschema:"enum=2.0"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *ErrorObject    `json:"error,omitempty"`
}

// ErrorObject is a JSON-RPC 2.0 error. -32601 answers a method the
// receiver does not know.
type ErrorObject struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// CheckEnvelope returns every way one line breaks JSON-RPC 2.0 as the wire
// uses it: a request (id and method), a notification (method, no id) or an
// answer (id, and a result or an error), with no other key. What a method's
// params or result must hold is CheckParams' and CheckResult's.
func CheckEnvelope(line []byte) []Problem {
	ps := checkAs(line, reflect.TypeFor[envelope](), "")
	var e envelope
	if len(ps) > 0 || json.Unmarshal(line, &e) != nil {
		return ps
	}
	add := func(format string, args ...any) { ps = append(ps, Problem{Message: fmt.Sprintf(format, args...)}) }
	if e.ID != nil {
		if k := KindOf(e.ID); k != "a string" && k != "a number" && !(k == "null" && e.Method == "") {
			ps = append(ps, Problem{Path: "id", Message: "want a string or an integer, got " + k})
		}
	}
	switch {
	case e.Method != "" && (e.Result != nil || e.Error != nil):
		add("a request or notification holds no result or error")
	case e.Method != "" && e.Params == nil:
		ps = append(ps, Problem{Path: "params", Message: "required, but missing"})
	case e.Method == "" && e.ID == nil:
		add("neither a request (method) nor an answer (id)")
	case e.Method == "" && (e.Result == nil) == (e.Error == nil):
		add("an answer holds a result or an error, not both and not neither")
	case e.Method == "" && e.Params != nil:
		add("an answer holds no params")
	}
	return ps
}

// CheckParams returns every way a message's params break the rules of its
// method, sent by side from (HostToPlugin: the host sent it). ok is false
// when from may not send the method at all. The params of a service/call
// to the host's own service are held to that door's rules too.
func CheckParams(method string, from Direction, params json.RawMessage) (ps []Problem, ok bool) {
	m, ok := find(Requests(), method)
	if !ok {
		m, ok = find(Notifications(), method)
	}
	if !ok || !m.Direction.Sends(from) {
		return nil, false
	}
	ps = checkAs(params, reflect.TypeOf(m.Params), "params")
	var call ServiceCallParams
	if method == MethodServiceCall && len(ps) == 0 && json.Unmarshal(params, &call) == nil && call.Key == HostServiceKey {
		door, ok := find(HostMethods(), call.Method)
		if !ok || !door.Direction.Sends(from) {
			return append(ps, Problem{Path: "params.method", Message: fmt.Sprintf("%s is not a door of %s", Quote(call.Method), HostServiceKey)}), true
		}
		ps = checkAs(call.Params, reflect.TypeOf(door.Params), "params.params")
	}
	return ps, true
}

// CheckResult returns every way the result of an answer to method breaks
// that method's rules, with paths inside the result. A method that is not
// a request, or whose answer carries nothing to check, has none.
func CheckResult(method string, result json.RawMessage) []Problem {
	m, ok := find(Requests(), method)
	if !ok || m.Result == nil {
		return nil
	}
	return checkAs(result, reflect.TypeOf(m.Result), "")
}

// Lookup returns the request or notification named name.
func Lookup(name string) (Method, bool) {
	if m, ok := find(Requests(), name); ok {
		return m, true
	}
	return find(Notifications(), name)
}
