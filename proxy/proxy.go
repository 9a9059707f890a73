package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ToolName is the name a plugin's tool wears in the host:
// plugin__<plugin>__<tool>, so the permission grammar can address it.
func ToolName(plugin, tool string) string { return "plugin__" + plugin + "__" + tool }

// SplitToolName is ToolName undone: the plugin and tool a host tool name
// names, ok false for a name not of that form.
func SplitToolName(name string) (plugin, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "plugin__")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}

// MaxToolName is the longest tool name model APIs accept.
const MaxToolName = 64

// CheckToolName says why a plugin's tool cannot be offered, beyond what
// the schema states of a tool name (its alphabet and length, which the
// bridge checks first), or nil. Names are refused rather than shortened: a
// shortened name would be one the plugin's author never wrote and a
// permission rule could not predict.
func CheckToolName(plugin, tool string) error {
	if strings.Contains(tool, "__") {
		return errors.New("tool name " + protocol.Quote(tool) + " may not contain \"__\" (it separates the parts of plugin__<plugin>__<tool>)")
	}
	if full := ToolName(plugin, tool); len(full) > MaxToolName {
		return errors.New("tool name " + protocol.Quote(full) + " is longer than 64 characters, which model APIs refuse; shorten the tool's name")
	}
	return nil
}

// answer is the result a proxy hands its Caller, which decodes the plugin's
// answer into it: protocol.Decode fills *v (see the package doc), then
// checks hold it to what the schema says beyond the Go types.
type answer[T any] struct {
	v      *T
	checks []func(T) error
}

func into[T any](v *T, checks ...func(T) error) *answer[T] { return &answer[T]{v, checks} }

// UnmarshalJSON implements json.Unmarshaler.
func (a *answer[T]) UnmarshalJSON(b []byte) error {
	v, err := protocol.Decode[T](b)
	for _, check := range a.checks {
		if err == nil {
			err = check(v)
		}
	}
	if err != nil {
		return fmt.Errorf("bad answer: %w", err)
	}
	*a.v = v
	return nil
}

// Tool is a plugin's tool, seen by the host as an sdk.Tool.
type Tool struct {
	c      Caller
	spec   sdk.ToolSpec // as the host shows it: the rewritten name, no traits
	remote string       // the name the plugin knows it by
}

// NewTool wraps the plugin's declared spec. The host-facing spec wears the
// rewritten name and drops whatever traits the plugin claimed.
func NewTool(c Caller, plugin string, declared sdk.ToolSpec) *Tool {
	spec := declared
	spec.Name = ToolName(plugin, declared.Name)
	spec.Traits = nil
	return &Tool{c: c, spec: spec, remote: declared.Name}
}

var _ sdk.Tool = (*Tool)(nil)

// Spec implements sdk.Tool.
func (t *Tool) Spec() sdk.ToolSpec { return t.spec }

// Traits implements sdk.Tool: always the untrusted default.
func (t *Tool) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }

// Call implements sdk.Tool. Cancelling ctx sends tool/cancel and keeps
// waiting for the answer until the deadline.
func (t *Tool) Call(ctx context.Context, call sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
	var res protocol.ToolCallResult
	err := t.c.Call(ctx, Request{
		Kind:   KindTool,
		Method: protocol.MethodToolCall,
		Params: protocol.ToolCallParams{
			CallID: call.ID, Name: t.remote, Input: call.Input,
			Cwd: call.Cwd, Session: call.Session, Turn: call.Turn,
		},
		CancelMethod: protocol.NotifyToolCancel,
		CancelParams: protocol.ToolCancel{CallID: call.ID},
		CallID:       call.ID,
		UI:           ui,
	}, into(&res))
	return res.Output, err
}

// Command is a plugin's slash command, seen by the host as an sdk.Command.
type Command struct {
	c    Caller
	spec sdk.CommandSpec
}

// NewCommand wraps a declared command.
func NewCommand(c Caller, spec sdk.CommandSpec) *Command { return &Command{c: c, spec: spec} }

var _ sdk.Command = (*Command)(nil)

// Spec implements sdk.Command.
func (c *Command) Spec() sdk.CommandSpec { return c.spec }

// Run implements sdk.Command.
func (c *Command) Run(ctx context.Context, run sdk.CommandRun) (sdk.CommandOutcome, error) {
	var res protocol.CommandRunResult
	err := c.c.Call(ctx, Request{Kind: KindCommand, Method: protocol.MethodCommandRun, Params: protocol.CommandRunParams{
		Name: c.spec.Name, Args: run.Args, Cwd: run.Cwd, Session: run.Session,
	}}, into(&res, viewHasView))
	return res.Outcome, err
}

// viewHasView holds a "view" outcome to what the schema's union says and a
// Go decoder cannot see: it needs its view.
func viewHasView(r protocol.CommandRunResult) error {
	if r.Outcome.Kind == sdk.OutcomeView && r.Outcome.View == nil {
		return errors.New(`outcome: kind "view" needs a "view"`)
	}
	return nil
}

// Complete implements sdk.Command.
func (c *Command) Complete(ctx context.Context, req sdk.CompleteRequest) ([]sdk.Completion, error) {
	var res protocol.CommandCompleteResult
	err := c.c.Call(ctx, Request{Kind: KindComplete, Method: protocol.MethodCommandComplete, Params: protocol.CommandCompleteParams{
		Name: c.spec.Name, Partial: req.Partial, Cwd: req.Cwd,
	}}, into(&res))
	return res.Completions, err
}

// Contributor is a plugin's context contributor.
type Contributor struct {
	c  Caller
	id string
}

// NewContributor wraps a declared contributor.
func NewContributor(c Caller, id string) *Contributor { return &Contributor{c: c, id: id} }

var _ sdk.Contributor = (*Contributor)(nil)

// ID implements sdk.Contributor.
func (p *Contributor) ID() string { return p.id }

// Contribute implements sdk.Contributor. The query crosses as its
// serialisable projection.
func (p *Contributor) Contribute(ctx context.Context, q sdk.Query) ([]sdk.Piece, error) {
	var res protocol.ContextContributeResult
	err := p.c.Call(ctx, Request{Kind: KindContributor, Method: protocol.MethodContextContribute,
		Params: protocol.ContextContributeParams{ID: p.id, Query: q}}, into(&res))
	return res.Pieces, err
}

// Compactor is a plugin's compaction strategy.
type Compactor struct {
	c  Caller
	id string
}

// NewCompactor wraps a declared compactor.
func NewCompactor(c Caller, id string) *Compactor { return &Compactor{c: c, id: id} }

var _ sdk.Compactor = (*Compactor)(nil)

// ID implements sdk.Compactor.
func (p *Compactor) ID() string { return p.id }

// Compact implements sdk.Compactor.
func (p *Compactor) Compact(ctx context.Context, req sdk.CompactRequest) (sdk.Compaction, error) {
	var res protocol.CompactorCompactResult
	err := p.c.Call(ctx, Request{Kind: KindCompactor, Method: protocol.MethodCompactorCompact,
		Params: protocol.CompactorCompactParams{ID: p.id, Context: req.Context, Reason: req.Reason}}, into(&res))
	return res.Compaction, err
}

// Provider is a plugin's model provider.
type Provider struct {
	c      Caller
	id     string
	nextID func() string
}

// NewProvider wraps a declared provider. nextID names each stream.
func NewProvider(c Caller, id string, nextID func() string) *Provider {
	return &Provider{c: c, id: id, nextID: nextID}
}

var _ sdk.Provider = (*Provider)(nil)

// ID implements sdk.Provider.
func (p *Provider) ID() string { return p.id }

// Stream implements sdk.Provider: deltas arrive as provider/delta
// notifications before the request's answer; cancelling ctx sends
// provider/cancel.
func (p *Provider) Stream(ctx context.Context, req sdk.ProviderRequest, emit func(sdk.StreamEvent)) (sdk.StreamEnd, error) {
	sid := p.nextID()
	var res protocol.ProviderStreamResult
	err := p.c.Call(ctx, Request{
		Kind:         KindProvider,
		Method:       protocol.MethodProviderStream,
		Params:       protocol.ProviderStreamParams{ID: p.id, StreamID: sid, Request: req},
		CancelMethod: protocol.NotifyProviderCancel,
		CancelParams: protocol.ProviderCancel{StreamID: sid},
		StreamID:     sid,
		Deltas:       emit,
	}, into(&res))
	if err == nil && ctx.Err() != nil {
		// The plugin finished after a cancel: the caller asked to stop, so
		// it hears that rather than a complete-looking answer.
		err = ctx.Err()
	}
	return res.End, err
}

// Hook is a plugin's hook.
type Hook struct {
	c  Caller
	id string
}

// NewHook wraps a declared hook.
func NewHook(c Caller, id string) *Hook { return &Hook{c: c, id: id} }

var _ sdk.Hook = (*Hook)(nil)

// ID implements sdk.Hook.
func (h *Hook) ID() string { return h.id }

// Decide implements sdk.Hook. An outcome the host does not know is an
// error, so it decides nothing rather than something unintended.
func (h *Hook) Decide(ctx context.Context, ev sdk.HookEvent) (sdk.HookDecision, error) {
	var res protocol.HookDecideResult
	err := h.c.Call(ctx, Request{Kind: KindHook, Method: protocol.MethodHookDecide,
		Params: protocol.HookDecideParams{ID: h.id, Site: ev.Site, Point: ev.Point, Payload: ev.Payload}}, into(&res))
	if err != nil {
		return sdk.HookDecision{}, err
	}
	switch res.Outcome {
	case sdk.HookContinue, sdk.HookDeny, sdk.HookAsk, sdk.HookBlock, sdk.HookRedirect:
		return res, nil
	}
	return sdk.HookDecision{}, errors.New("hook " + protocol.Quote(h.id) + " answered unknown outcome " + protocol.Quote(string(res.Outcome)))
}

// Observe implements sdk.Hook.
func (h *Hook) Observe(ctx context.Context, ev sdk.HookEvent) {
	_ = h.c.Notify(ctx, protocol.NotifyHookObserve, protocol.HookObserve{ID: h.id, Site: ev.Site, Point: ev.Point, Payload: ev.Payload})
}

// Service is a service a plugin answers under a key.
type Service struct {
	c   Caller
	key string
}

// NewService wraps a declared service.
func NewService(c Caller, key string) *Service { return &Service{c: c, key: key} }

var _ sdk.Service = (*Service)(nil)

// Key implements sdk.Service.
func (s *Service) Key() string { return s.key }

// Call implements sdk.Service.
func (s *Service) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var res protocol.ServiceCallResult
	err := s.c.Call(ctx, Request{Kind: KindService, Method: protocol.MethodServiceCall,
		Params: protocol.ServiceCallParams{Key: s.key, Method: method, Params: params}}, into(&res))
	return res.Result, err
}
