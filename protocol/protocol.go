// Package protocol holds the plugin wire's envelopes: the method names, the
// params and results of every request, and the notifications, in both
// directions. The values inside the envelopes are the sdk's own types; this
// package adds envelopes and never shapes.
//
// The wire is JSON-RPC 2.0, one message per line, UTF-8, on the plugin's
// stdin and stdout. schema/plugin.json is generated from these types, and
// Check and Decode hold what a plugin sends to the same rules, read from
// the same types and tags, saying what is wrong in the wire's words.
package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Version is the protocol the host speaks. A plugin that answers another is
// refused with a notice.
const Version = 5

// Methods (requests) and notifications, as the spec's tables name them.
const (
	MethodInitialize        = "initialize"         // host → plugin
	MethodToolCall          = "tool/call"          // host → plugin
	MethodCommandRun        = "command/run"        // host → plugin
	MethodCommandComplete   = "command/complete"   // host → plugin
	MethodContextContribute = "context/contribute" // host → plugin
	MethodCompactorCompact  = "compactor/compact"  // host → plugin
	MethodProviderStream    = "provider/stream"    // host → plugin
	MethodHookDecide        = "hook/decide"        // host → plugin
	MethodServiceCall       = "service/call"       // both ways

	NotifyToolProgress   = "tool/progress"   // plugin → host
	NotifyToolCancel     = "tool/cancel"     // host → plugin
	NotifyProviderDelta  = "provider/delta"  // plugin → host
	NotifyProviderCancel = "provider/cancel" // host → plugin
	NotifyHookObserve    = "hook/observe"    // host → plugin
	NotifyPluginDeclare  = "plugin/declare"  // plugin → host
)

// HostServiceKey is the reserved service key of the host's own doors (ask
// and notice). No plugin may declare it.
const HostServiceKey = "bingo.host"

// Methods of the bingo.host service.
const (
	HostAsk    = "ask"
	HostNotice = "notice"
)

// InitializeParams is the handshake's request.
type InitializeParams struct {
	Protocol   int    `json:"protocol"`
	PluginRoot string `json:"pluginRoot"`
	// Config is the person's settings value plugins.<name>, any JSON exactly as written, or null.
	Config json.RawMessage `json:"config"`
	// Env is the manifest's entry.env, expanded.
	Env map[string]string `json:"env"`
	// DataDir is the plugin's own writable directory, which the host
	// created (0700) before starting it: ~/.bingo/data/plugins/<name>/ for
	// the person's plugins. A wasm plugin sees it read-write at the same
	// path. Absent for a plugin of a project the person has not trusted.
	DataDir string `json:"dataDir,omitempty"`
}

// InitializeResult is what the plugin is and everything it contributes.
// Every contribution list is optional. The plugin/declare notification
// carries one too: the plugin's whole declaration again, when what it
// offers has changed (an MCP server's list_changed); the host holds it to
// the handshake's rules and replaces what the plugin contributed.
type InitializeResult struct {
	Protocol     int               `json:"protocol"`
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	Tools        []sdk.ToolSpec    `json:"tools,omitempty"`
	Commands     []sdk.CommandSpec `json:"commands,omitempty"`
	Contributors []ContributorDecl `json:"contributors,omitempty"`
	Compactors   []CompactorDecl   `json:"compactors,omitempty"`
	Providers    []ProviderDecl    `json:"providers,omitempty"`
	Hooks        []HookDecl        `json:"hooks,omitempty"`
	Services     []ServiceDecl     `json:"services,omitempty"`
}

// ContributorDecl declares a context contributor.
type ContributorDecl struct {
	ID          string `json:"id" jsonschema:"minLength=1"`
	Description string `json:"description,omitempty"`
}

// CompactorDecl declares a compaction strategy.
type CompactorDecl struct {
	ID          string `json:"id" jsonschema:"minLength=1"`
	Description string `json:"description,omitempty"`
}

// ProviderDecl declares a model provider.
type ProviderDecl struct {
	ID          string   `json:"id" jsonschema:"minLength=1"`
	Description string   `json:"description,omitempty"`
	Models      []string `json:"models,omitempty"`
}

// HookDecl declares a hook and the points it wants: Decide lists the
// "site/point" decision points it answers ("tool/before", "prompt/before"),
// Observe the observation points it wants to hear about ("tool/after",
// "turn/end"). These are every point the host fires (sdk.DecisionPoints(),
// sdk.ObservationPoints()): a hook naming another is refused.
type HookDecl struct {
	ID      string   `json:"id" jsonschema:"minLength=1"`
	Decide  []string `json:"decide,omitempty"`
	Observe []string `json:"observe,omitempty"`
}

// ServiceDecl declares a service the plugin answers under Key. Methods
// and Params are informative (the host routes every method of the key):
// Params gives, by method name, the JSON Schema of that method's params,
// from which `bingo plugins check` builds a call to make.
type ServiceDecl struct {
	Key     string                     `json:"key" jsonschema:"minLength=1"`
	Methods []string                   `json:"methods,omitempty"`
	Params  map[string]json.RawMessage `json:"params,omitempty"`
}

// ToolCallParams runs a tool.
type ToolCallParams struct {
	CallID  string          `json:"callId"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Cwd     string          `json:"cwd"`
	Session string          `json:"session"`
	Turn    int             `json:"turn"`
}

// ToolCallResult is a tool's answer.
type ToolCallResult struct {
	Output sdk.ToolOutput `json:"output"`
}

// ToolProgress is the call's live output line.
type ToolProgress struct {
	CallID string `json:"callId"`
	Tail   string `json:"tail"`
}

// ToolCancel says the turn was interrupted; the host still waits for the
// call's answer until its deadline.
type ToolCancel struct {
	CallID string `json:"callId"`
}

// CommandRunParams runs a command.
type CommandRunParams struct {
	Name    string `json:"name"`
	Args    string `json:"args"`
	Cwd     string `json:"cwd"`
	Session string `json:"session"`
}

// CommandRunResult is a command's outcome.
type CommandRunResult struct {
	Outcome sdk.CommandOutcome `json:"outcome"`
}

// CommandCompleteParams asks for completions.
type CommandCompleteParams struct {
	Name    string `json:"name"`
	Partial string `json:"partial"`
	Cwd     string `json:"cwd"`
}

// CommandCompleteResult lists completions.
type CommandCompleteResult struct {
	Completions []sdk.Completion `json:"completions"`
}

// ContextContributeParams asks a contributor for pieces.
type ContextContributeParams struct {
	ID    string    `json:"id"`
	Query sdk.Query `json:"query"`
}

// ContextContributeResult is a contributor's pieces.
type ContextContributeResult struct {
	Pieces []sdk.Piece `json:"pieces"`
}

// CompactorCompactParams asks a compactor to compact.
type CompactorCompactParams struct {
	ID      string        `json:"id"`
	Context []sdk.Message `json:"context"`
	Reason  string        `json:"reason"`
}

// CompactorCompactResult is a compaction.
type CompactorCompactResult struct {
	Compaction sdk.Compaction `json:"compaction"`
}

// ProviderStreamParams asks a provider for one model response. The
// response streams back as provider/delta notifications carrying StreamID;
// the request's result arrives when the response is complete.
type ProviderStreamParams struct {
	ID       string              `json:"id"`
	StreamID string              `json:"streamId"`
	Request  sdk.ProviderRequest `json:"request"`
}

// ProviderStreamResult ends a streamed response.
type ProviderStreamResult struct {
	End sdk.StreamEnd `json:"end"`
}

// ProviderDelta is one chunk of a streamed response.
type ProviderDelta struct {
	StreamID string          `json:"streamId"`
	Event    sdk.StreamEvent `json:"event"`
}

// ProviderCancel asks the provider to stop streaming.
type ProviderCancel struct {
	StreamID string `json:"streamId"`
}

// HookDecideParams asks a hook to decide.
type HookDecideParams struct {
	ID      string          `json:"id"`
	Site    string          `json:"site"`
	Point   string          `json:"point"`
	Payload json.RawMessage `json:"payload"`
}

// HookDecideResult is a hook's decision.
type HookDecideResult = sdk.HookDecision

// HookObserve tells a hook what happened; nothing waits on it.
type HookObserve struct {
	ID      string          `json:"id"`
	Site    string          `json:"site"`
	Point   string          `json:"point"`
	Payload json.RawMessage `json:"payload"`
}

// ServiceCallParams calls a service method, in either direction.
type ServiceCallParams struct {
	Key    string          `json:"key"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// ServiceCallResult is a service method's answer.
type ServiceCallResult struct {
	Result json.RawMessage `json:"result"`
}

// AskParams are the params of bingo.host ask: a question to the person on a
// call the plugin is running now.
type AskParams struct {
	Call     string `json:"call"`
	Question string `json:"question"`
}

// AskResult is the person's answer.
type AskResult struct {
	Answer string `json:"answer"`
}

// NoticeParams are the params of bingo.host notice: one line under the
// plugin's own name.
type NoticeParams struct {
	Level   string `json:"level" jsonschema:"enum=info,enum=warn,enum=error"`
	Message string `json:"message"`
}

// NotificationOf reads line as a notification (a method and no id): its
// method and params, and true; false for anything else. It decodes only
// the envelope, and an answer (no "method" anywhere) not at all, so a
// reader may try it on every line. A missing or wrong "jsonrpc" member is
// forgiven, as a general JSON-RPC decoder forgives it in requests.
func NotificationOf(line []byte) (method string, params json.RawMessage, ok bool) {
	if !bytes.Contains(line, []byte(`"method"`)) {
		return "", nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID != nil || m.Method == "" {
		return "", nil, false
	}
	return m.Method, m.Params, true
}
