package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// cancelCall is the cancel step's call: the author's (Options.Inputs
// under CancelInput), else the first tool that answered, with the input
// it answered to.
func (c *checker) cancelCall() (t sdk.Tool, name string, input json.RawMessage, from string, ok bool) {
	contrib := c.plugin.Contributions()
	decl, _ := c.plugin.Declaration()
	if raw, given := c.opts.Inputs[CancelInput]; given {
		var in struct {
			Tool  string          `json:"tool"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(raw, &in) == nil && in.Tool != "" && len(in.Input) > 0 {
			for i, spec := range decl.Tools {
				if spec.Name == in.Tool {
					return contrib.Tools[i], spec.Name, in.Input, "the input from --inputs", true
				}
			}
		}
		c.add(Fail, "tool/cancel", "the %q input must be {\"tool\": <a declared tool>, \"input\": {…}}", CancelInput)
		return nil, "", nil, "", false
	}
	for i, spec := range decl.Tools {
		if c.stuck[spec.Name] {
			continue
		}
		if input, from := c.toolInput(spec); input != nil {
			return contrib.Tools[i], spec.Name, input, from, true
		}
	}
	return nil, "", nil, "", false
}

// cancel starts a tool call and cancels it as soon as it is on the wire.
// A call that takes long enough to be cancelled while it works
// (minCancellable, uncancelled) must answer well before its work would
// have ended: one that answers about as late as uncancelled saw the
// cancel only after its work.
func (c *checker) cancel(ctx context.Context) {
	t, name, input, from, ok := c.cancelCall()
	if !ok {
		return
	}
	subject := "tool/cancel (tool " + name + ")"
	call := func(ctx context.Context, id string) (time.Duration, error) {
		start := time.Now()
		_, err := t.Call(ctx, sdk.ToolCall{ID: id, Name: t.Spec().Name, Input: input, Cwd: c.opts.Cwd, Session: "check", Turn: 1}, ui{})
		if answered(err) {
			err = nil // a bad answer is an answer here: it is reported as such
		}
		return time.Since(start), err
	}
	work, measured := c.took[callKey(name, input)]
	if !measured {
		elapsed, err := call(ctx, "check-uncancelled")
		if err != nil {
			c.timed(subject, elapsed, c.dl.Tool, err, "")
			c.unstick(err, name)
			return
		}
		work = elapsed
	}

	const id = "check-cancel"
	cctx, cancelled := cancelOnSend(ctx, c.tap.watch(`"callId":"`+id+`"`))
	elapsed, err := call(cctx, id)
	end := time.Now()
	at := cancelled()
	cancelSeen := c.tap.saw("host", `"method":"tool/cancel"`)
	after := end.Sub(at)
	if at.IsZero() {
		after = elapsed
	}
	switch {
	case err != nil:
		c.timed(subject, elapsed, c.dl.Tool, err, "")
		c.unstick(err, name)
	case !cancelSeen || work < minCancellable:
		hint := ""
		if _, given := c.opts.Inputs[CancelInput]; !given {
			hint = fmt.Sprintf("; to see it stop, give --inputs a slower call under %q (see docs/plugins.md)", CancelInput)
		}
		c.add(OK, subject, "answered in %s with %s, too soon to tell whether it stops at a cancel (%s uncancelled)%s",
			round(elapsed), from, round(work), hint)
	case after > work/2:
		c.add(Fail, subject, "went on after tool/cancel: answered %s after it, where the call takes %s uncancelled; "+
			"a plugin must see tool/cancel while it works (see Cancel in docs/plugins.md)", round(after), round(work))
	default:
		c.timed(subject, after, c.dl.Tool, nil, fmt.Sprintf(" after tool/cancel (%s uncancelled)", round(work)))
	}
}

// cancelOnSend returns a context of ctx cancelled as soon as sent is
// closed (the call is on the wire), and cancelled, which stops the
// watching, waits for it to end and says when it cancelled (zero if it
// did not): the one read of that time, after its one write.
func cancelOnSend(ctx context.Context, sent <-chan struct{}) (context.Context, func() time.Time) {
	cctx, cancel := context.WithCancel(ctx)
	at := make(chan time.Time, 1)
	go func() {
		var t time.Time
		select {
		case <-sent:
			t = time.Now()
			cancel()
		case <-cctx.Done():
		}
		at <- t
	}()
	return cctx, func() time.Time {
		cancel()
		return <-at
	}
}

// respawn kills the live instance and calls again.
func (c *checker) respawn(ctx context.Context) {
	const subject = "respawn"
	call := c.anyCall()
	switch {
	case call == nil && len(c.stuck) > 0:
		c.add(OK, subject, "not tried: nothing it declares answered to call again")
		return
	case call == nil:
		c.add(OK, subject, "not tried: it declares nothing to call")
		return
	}
	if !c.killLive() {
		return
	}
	before := c.tap.count("host", `"method":"initialize"`)
	start := time.Now()
	what, err := call(ctx)
	elapsed := time.Since(start)
	if err != nil && !answered(err) {
		c.add(Fail, subject, "killed it; the next call failed: %v", err)
		return
	}
	if c.tap.count("host", `"method":"initialize"`) == before {
		c.add(Fail, subject, "killed it; the next call did not start it again")
		return
	}
	c.add(OK, subject, "killed it; the next call (%s) started it again and was answered in %s", what, round(elapsed))
}

// answered says whether err is the plugin's answer (an error or a bad
// answer), rather than no answer at all.
func answered(err error) bool {
	return err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sdk.ErrUnavailable) || errors.Is(err, context.Canceled))
}

// anyCall is one call to something the plugin declared, for the respawn.
func (c *checker) anyCall() func(context.Context) (string, error) {
	contrib := c.plugin.Contributions()
	decl, _ := c.plugin.Declaration()
	tool := slices.IndexFunc(decl.Tools, func(t sdk.ToolSpec) bool { return !c.stuck[t.Name] })
	switch {
	case tool >= 0:
		return func(ctx context.Context) (string, error) {
			input, _ := c.toolInput(decl.Tools[tool])
			if input == nil {
				input = json.RawMessage(`{}`)
			}
			_, err := contrib.Tools[tool].Call(ctx, sdk.ToolCall{ID: "check-respawn", Name: contrib.Tools[tool].Spec().Name, Input: input,
				Cwd: c.opts.Cwd, Session: "check", Turn: 1}, ui{})
			return "tool " + decl.Tools[tool].Name, err
		}
	case len(contrib.Commands) > 0:
		cmd := contrib.Commands[0]
		return func(ctx context.Context) (string, error) {
			_, err := cmd.Complete(ctx, sdk.CompleteRequest{Name: cmd.Spec().Name, Cwd: c.opts.Cwd})
			return "completion /" + cmd.Spec().Name, err
		}
	case len(contrib.Contributors) > 0:
		p := contrib.Contributors[0]
		return func(ctx context.Context) (string, error) {
			_, err := p.Contribute(ctx, sdk.Query{Prompt: "hello", Cwd: c.opts.Cwd, Session: "check", Turn: 2, Budget: 2000})
			return "contributor " + p.ID(), err
		}
	case len(contrib.Compactors) > 0:
		p := contrib.Compactors[0]
		return func(ctx context.Context) (string, error) {
			_, err := p.Compact(ctx, sdk.CompactRequest{Reason: "command", Context: sampleConversation()})
			return "compactor " + p.ID(), err
		}
	case len(contrib.Providers) > 0:
		p := contrib.Providers[0]
		return func(ctx context.Context) (string, error) {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := p.Stream(sctx, sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "hello"}}},
				func(sdk.StreamEvent) { cancel() })
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			return "provider " + p.ID(), err
		}
	case len(contrib.Hooks) > 0 && len(contrib.Hooks[0].DecidePoints) > 0:
		h := contrib.Hooks[0]
		point := h.DecidePoints[0]
		site, pt, _ := strings.Cut(point, "/")
		return func(ctx context.Context) (string, error) {
			_, err := h.Decide(ctx, sdk.HookEvent{Site: site, Point: pt, Payload: samplePayload(point, c.opts.Cwd)})
			return "hook " + h.ID() + " at " + point, err
		}
	}
	return nil
}
