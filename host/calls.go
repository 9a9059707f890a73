package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// UI is what the host needs from the person's side of the run. The CLI
// implements it for a terminal and for --print. Methods may be called
// concurrently.
type UI interface {
	// Progress shows a running tool call's live output line.
	Progress(tool, tail string)
	// Ask puts a running tool's question to the person.
	Ask(ctx context.Context, tool, question string) (string, error)
	// Approve asks the person whether a tool call may run. It returns
	// ErrNoOneToAsk when nobody can answer (--print, no terminal).
	Approve(ctx context.Context, call sdk.ToolCall, why string) (bool, error)
}

// CallWatcher is a UI that shows how long a tool call runs, so that a
// tool working in silence is not taken for a hung one: CallTool calls
// Started as the tool is called and the function it returns once the
// call has ended.
type CallWatcher interface {
	Started(tool string) (ended func())
}

// ErrNoOneToAsk is what a UI answers when there is no person to ask.
var ErrNoOneToAsk = errors.New("there is no one to ask")

// DeniedError is the error of a tool call the gate or a hook refused.
type DeniedError struct {
	Tool   string
	Reason string
}

func (e *DeniedError) Error() string { return e.Tool + " denied: " + e.Reason }

// BlockedError is the error of a tool call a hook blocked: the turn stops.
type BlockedError struct {
	Tool, Hook, Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s blocked by hook %s: %s", e.Tool, e.Hook, e.Reason)
}

// CallTool runs one tool call exactly as a model's call runs: hooks at
// tool/before, then the gate, then the tool, then hooks observe tool/after.
// A refused call returns a *DeniedError or *BlockedError; a tool that could
// not answer, or input that is not a JSON object, returns its error, with
// an error output the model can read.
//
// req.ID, the model's name for the call, is not used: a model's id may be
// missing or repeated, and the call's progress, questions and cancellation
// are routed by its id. The host names every call itself, uniquely in the
// session; the caller keeps the model's id for the tool result it sends
// back.
func (h *Host) CallTool(ctx context.Context, req sdk.ToolCallRequest, turn int, ui UI) (sdk.ToolOutput, error) {
	tool, ok := h.reg.Tool(req.Name)
	if !ok {
		err := fmt.Errorf("unknown tool %q", req.Name)
		return errorOutput(err), err
	}
	input, err := objectInput(req.Input)
	if err != nil {
		err = fmt.Errorf("%s: %w", req.Name, err)
		return errorOutput(err), err
	}
	call := sdk.ToolCall{ID: "call-" + strconv.FormatUint(h.calls.Add(1), 10), Name: req.Name, Input: input,
		Cwd: h.cfg.Cwd, Session: h.cfg.Session, Turn: turn}

	// Hooks can only tighten: their verdict is combined with the gate's,
	// never in place of it.
	d := h.decide(ctx, sdk.ToolBefore, call)
	switch d.outcome {
	case sdk.HookBlock:
		return sdk.ToolOutput{}, &BlockedError{Tool: call.Name, Hook: d.hook, Reason: d.reason}
	case sdk.HookDeny:
		return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: fmt.Sprintf("hook %s: %s", d.hook, d.reason)}
	case sdk.HookRedirect:
		call.Input = d.value
	}

	verdict, rule := h.gate.Decide(call.Name)
	switch {
	case verdict == gate.Deny:
		return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: "denied by " + rule}
	case verdict == gate.Ask || d.outcome == sdk.HookAsk:
		why := "no rule allows it"
		if d.outcome == sdk.HookAsk {
			why = fmt.Sprintf("hook %s asks: %s", d.hook, d.reason)
		} else if rule != "" {
			why = "asked by " + rule
		}
		if claims := tool.Spec().Claims; claims != "" {
			why += "; it claims, unverified: " + claims
		}
		ok, err := ui.Approve(ctx, call, why)
		switch {
		case errors.Is(err, ErrNoOneToAsk) && d.outcome == sdk.HookAsk:
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: hookUnanswered(d)}
		case errors.Is(err, ErrNoOneToAsk):
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: why + " and " + err.Error() + "; " + h.gate.HowToAllow(call.Name) + h.notInForce()}
		}
		if err != nil {
			return sdk.ToolOutput{}, err
		}
		if !ok {
			return sdk.ToolOutput{}, &DeniedError{Tool: call.Name, Reason: "the person said no"}
		}
	}

	ended := func() {}
	if w, ok := ui.(CallWatcher); ok {
		ended = w.Started(call.Name)
	}
	out, err := tool.Call(ctx, call, callUI{ui: ui, tool: call.Name})
	ended()
	if err != nil {
		out = errorOutput(err)
	}
	h.observe(sdk.ToolAfter, sdk.ToolAfterPayload{Call: call, Output: out})
	return out, err
}

// hookUnanswered says that a hook's question found no one to answer it.
// It advises no allow rule: a hook asks whatever the rules allow, so only
// a person can answer it.
func hookUnanswered(d decision) string {
	return fmt.Sprintf("hook %s asks: %s; no one can answer it here (--print, or no terminal): run bingo on a terminal to answer it", d.hook, d.reason)
}

// objectInput is a call's input as a tool is given it: a JSON object, as
// every tool's input schema says. No input, or null, is the empty object;
// anything else is refused before a hook, the gate or the tool sees it,
// with what it was, so the model can correct itself.
func objectInput(raw json.RawMessage) (json.RawMessage, error) {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0 || string(t) == "null":
		return json.RawMessage("{}"), nil
	case !json.Valid(t):
		return nil, fmt.Errorf("the input is not JSON; want a JSON object: %s", short(t))
	case !isObject(t):
		return nil, fmt.Errorf("the input must be a JSON object, not %s: %s", protocol.KindOf(t), short(t))
	}
	return raw, nil
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool { return protocol.KindOf(raw) == "an object" }

// short is raw for a message: at most 80 characters of it.
func short(raw []byte) string {
	if r := []rune(string(raw)); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return string(raw)
}

// ownNotice reports whether a contribution's failure deserves a notice of
// its own. A plugin that died already said so in its one death notice: a
// hook or contributor answering nothing because of it is part of that. A
// missed deadline is always the contribution's own.
func ownNotice(err error) bool {
	return !errors.Is(err, sdk.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

func errorOutput(err error) sdk.ToolOutput {
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(err.Error())}, IsError: true}
}

// callUI is the sdk.CallUI of one call.
type callUI struct {
	ui   UI
	tool string
}

func (c callUI) Progress(tail string) { c.ui.Progress(c.tool, tail) }
func (c callUI) Ask(ctx context.Context, q string) (string, error) {
	return c.ui.Ask(ctx, c.tool, q)
}

// decision is the combined decision of every hook at a point.
type decision struct {
	outcome      sdk.HookOutcome
	hook, reason string
	value        json.RawMessage
}

// severity orders outcomes: the strictest wins.
var severity = map[sdk.HookOutcome]int{sdk.HookContinue: 0, sdk.HookRedirect: 1, sdk.HookAsk: 2, sdk.HookDeny: 3, sdk.HookBlock: 4}

// decide asks every hook that declared at, at once. A hook that fails or
// misses its deadline decides nothing (a notice says so).
func (h *Host) decide(ctx context.Context, at sdk.HookPoint, payload any) decision {
	hooks := h.reg.Hooks(at, true)
	best := decision{outcome: sdk.HookContinue}
	if len(hooks) == 0 {
		return best
	}
	raw, _ := json.Marshal(payload)
	ev := sdk.HookEvent{Site: at.Site, Point: at.Point, Payload: raw}
	results := make([]sdk.HookDecision, len(hooks))
	var wg sync.WaitGroup
	for i, e := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.Hook.Decide(ctx, ev)
			if err != nil {
				if ownNotice(err) {
					h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s decided nothing: %v", e.Hook.ID(), err)})
				}
				d = sdk.HookDecision{Outcome: sdk.HookContinue}
			}
			// What a redirect goes on with is a tool's input or a model
			// request: an object at every point.
			if d.Outcome == sdk.HookRedirect && !(json.Valid(d.Value) && isObject(d.Value)) {
				h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s redirected without a valid value (want a JSON object); ignored", e.Hook.ID())})
				d = sdk.HookDecision{Outcome: sdk.HookContinue}
			}
			if d.Outcome == sdk.HookRedirect && h.trust.untrustedOwner(e.Owner) {
				d = h.unredirected(at, e, d)
			}
			results[i] = d
		}()
	}
	wg.Wait()
	for i, d := range results {
		if severity[d.Outcome] > severity[best.outcome] {
			best = decision{outcome: d.Outcome, hook: hooks[i].Hook.ID(), reason: d.Reason, value: d.Value}
		}
	}
	if best.reason == "" {
		best.reason = "no reason given"
	}
	return best
}

// unredirected is what an untrusted project plugin's redirect becomes: a
// redirect would run the person's tool, with the person's allow rules, on
// input the repository chose, or send the person's model a request it
// wrote. At tool/before it is a question to the person that shows the
// input proposed (a refusal where no one can answer); at prompt/before it
// changes nothing. Either way one notice per hook and point says so.
func (h *Host) unredirected(at sdk.HookPoint, e HookEntry, d sdk.HookDecision) sdk.HookDecision {
	if _, told := h.unredirect.LoadOrStore(e.Owner+"\x00"+e.Hook.ID()+"\x00"+at.String(), true); !told {
		what := "asked about instead"
		if at != sdk.ToolBefore {
			what = "ignored"
		}
		h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s redirected at %s; a plugin of a project you have not trusted may not change what runs, so its redirect is %s", e.Hook.ID(), at, what)})
	}
	if at != sdk.ToolBefore {
		return sdk.HookDecision{Outcome: sdk.HookContinue}
	}
	proposed := string(d.Value)
	if r := []rune(proposed); len(r) > maxShown {
		proposed = string(r[:maxShown]) + "…"
	}
	return sdk.HookDecision{Outcome: sdk.HookAsk, Reason: fmt.Sprintf("it would run the call with the input %s instead (not applied: its project is not trusted)", proposed)}
}

// observedBy is what an observer owned by owner is told of payload, and
// whether it is told at all; full is payload as every other observer is
// told it. A plugin of a project the person has not trusted hears only its
// own tools' outputs and the end of a turn without the model's words: it
// needs no more to watch what it contributes, and what the person's tools
// answered is the person's business, not a repository's.
func (h *Host) observedBy(owner string, payload any, full json.RawMessage) (json.RawMessage, bool) {
	if !h.trust.untrustedOwner(owner) {
		return full, true
	}
	switch p := payload.(type) {
	case sdk.ToolAfterPayload:
		return full, h.reg.toolOwner(p.Call.Name) == owner
	case sdk.TurnEndPayload:
		p.Text = ""
		raw, _ := json.Marshal(p)
		return raw, true
	}
	return full, true
}

// observe tells every hook that declared at what happened.
// Nothing waits on it: the observation is sent on its own goroutine, owned
// by the host (Close waits for them after stopping the plugins), so a hook
// whose process is not reading cannot hold up the turn. Each goroutine
// waits for the one before it, so hooks hear events in the order they
// happened.
func (h *Host) observe(at sdk.HookPoint, payload any) {
	hooks := h.reg.Hooks(at, false)
	if len(hooks) == 0 {
		return
	}
	full, _ := json.Marshal(payload)
	events := make([]*sdk.HookEvent, len(hooks))
	for i, e := range hooks {
		if raw, ok := h.observedBy(e.Owner, payload, full); ok {
			events[i] = &sdk.HookEvent{Site: at.Site, Point: at.Point, Payload: raw}
		}
	}
	h.obsMu.Lock()
	prev, done := h.obsTail, make(chan struct{})
	h.obsTail = done
	h.obsMu.Unlock()
	h.observers.Add(1)
	go func() {
		defer h.observers.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		for i, e := range hooks {
			if events[i] != nil {
				e.Hook.Observe(context.Background(), *events[i])
			}
		}
	}()
}

// ParseCommand splits "/name args" into name and args.
func ParseCommand(line string) (name, args string, ok bool) {
	if !strings.HasPrefix(line, "/") {
		return "", "", false
	}
	name, args, _ = strings.Cut(line[1:], " ")
	return name, strings.TrimLeft(args, " "), name != ""
}

// RunCommand runs a "/name args" line.
func (h *Host) RunCommand(ctx context.Context, line string) (sdk.CommandOutcome, error) {
	name, args, ok := ParseCommand(line)
	if !ok {
		return sdk.CommandOutcome{}, fmt.Errorf("not a command: %q", line)
	}
	cmd, ok := h.reg.Command(name)
	if !ok {
		return sdk.CommandOutcome{}, fmt.Errorf("unknown command /%s (bingo complete / lists them)", name)
	}
	return cmd.Run(ctx, sdk.CommandRun{Name: name, Args: args, Cwd: h.cfg.Cwd, Session: h.cfg.Session})
}

// Complete returns completions for a partial command line: command names
// while the name is being typed, then the command's own completion.
func (h *Host) Complete(ctx context.Context, line string) ([]sdk.Completion, error) {
	if !strings.HasPrefix(line, "/") {
		return nil, nil
	}
	name, partial, hasArgs := strings.Cut(line[1:], " ")
	if !hasArgs {
		var out []sdk.Completion
		for _, n := range h.reg.CommandNames() {
			if strings.HasPrefix(n, name) {
				c, _ := h.reg.Command(n)
				out = append(out, sdk.Completion{Value: "/" + n, Hint: c.Spec().Hint})
			}
		}
		return out, nil
	}
	cmd, ok := h.reg.Command(name)
	if !ok {
		return nil, fmt.Errorf("unknown command /%s", name)
	}
	return cmd.Complete(ctx, sdk.CompleteRequest{Name: name, Partial: strings.TrimLeft(partial, " "), Cwd: h.cfg.Cwd})
}

// routeService is the bridge's ServiceRouter: one plugin's call to a
// service another offers. A plugin of a project the person has not
// trusted reaches only its own project's services: the person's plugins
// serve with the person's authority (their files, their keys, their
// network), which a repository's sandboxed plugin must not borrow.
func (h *Host) routeService(ctx context.Context, from, key, method string, params json.RawMessage) (json.RawMessage, error) {
	var may func(owner string) error
	if h.trust.untrustedOwner(from) {
		may = func(owner string) error {
			if h.trust.ofProject(owner) {
				return nil
			}
			return fmt.Errorf("service %q is not this repository's: a plugin of a project you have not trusted may call only its own project's services", key)
		}
	}
	return h.reg.callService(ctx, key, method, params, may)
}
