package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// services answers the plugin's calls to other plugins' services: there
// are none here.
func (c *checker) services(ctx context.Context, from, key, method string, params json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("no service %q while checking", key)
}

// exercise calls every declared contribution once.
func (c *checker) exercise(ctx context.Context) {
	contrib := c.plugin.Contributions()
	decl, _ := c.plugin.Declaration()
	for i, t := range contrib.Tools {
		spec := decl.Tools[i]
		subject := "tool " + spec.Name
		input, from := c.toolInput(spec)
		if input == nil {
			c.add(Fail, subject, "%s", from)
			continue
		}
		start := time.Now()
		out, err := t.Call(ctx, sdk.ToolCall{ID: fmt.Sprintf("check-%d", i+1), Name: t.Spec().Name, Input: input,
			Cwd: c.opts.Cwd, Session: "check", Turn: 1}, ui{})
		elapsed := time.Since(start)
		what := " with " + from
		switch {
		case err == nil && out.IsError:
			what += " (its own error answer: " + render.Brief(out.Text(), 100) + ")"
		case err == nil:
			what += " (" + render.Brief(out.Text(), 100) + ")"
		}
		c.timed(subject, elapsed, c.dl.Tool, err, what)
		if err == nil {
			c.took[callKey(spec.Name, input)] = elapsed
		}
		c.unstick(err, spec.Name)
	}
	for _, cmd := range contrib.Commands {
		name := cmd.Spec().Name
		start := time.Now()
		out, err := cmd.Run(ctx, sdk.CommandRun{Name: name, Args: "", Cwd: c.opts.Cwd, Session: "check"})
		what := ""
		if err == nil {
			what = fmt.Sprintf(" with no arguments (a %q outcome)", out.Kind)
		}
		c.timed("command /"+name, time.Since(start), c.dl.Command, err, what)
		c.unstick(err, "")
		switch {
		case err != nil || out.Kind != sdk.OutcomeError:
		case cmd.Spec().Args.Kind == sdk.ArgsNone:
			// A command that takes no arguments was run as it always
			// is, and failed: that is not "ok".
			c.demote(fmt.Sprintf("; it failed: %s", render.Brief(out.Message, 100)))
		default:
			// Refusing a bare call is what a command that needs
			// arguments does; the line says so rather than "ok" alone.
			c.rep.Findings[len(c.rep.Findings)-1].Message += fmt.Sprintf(", refusing a bare call: %s", render.Brief(out.Message, 100))
		}
		start = time.Now()
		cs, err := cmd.Complete(ctx, sdk.CompleteRequest{Name: name, Partial: "", Cwd: c.opts.Cwd})
		c.timed("completion /"+name, time.Since(start), c.dl.Complete, err, fmt.Sprintf(" from \"\" (%d completions)", len(cs)))
		c.unstick(err, "")
	}
	for _, p := range contrib.Contributors {
		start := time.Now()
		pieces, err := p.Contribute(ctx, sdk.Query{Prompt: "how many words are in notes.txt?", Cwd: c.opts.Cwd, Session: "check", Turn: 1, Budget: 2000})
		c.timed("contributor "+p.ID(), time.Since(start), c.dl.Contributor, err, fmt.Sprintf(" (%d pieces)", len(pieces)))

		c.unstick(err, "")
	}
	for _, p := range contrib.Compactors {
		start := time.Now()
		conv := sampleConversation()
		comp, err := p.Compact(ctx, sdk.CompactRequest{Reason: "command", Context: conv})
		c.timed("compactor "+p.ID(), time.Since(start), c.dl.Compactor, err, fmt.Sprintf(" (%d messages kept)", len(comp.Messages)))
		c.unstick(err, "")
		if err == nil {
			if err := agent.VetCompaction(conv, comp.Messages); err != nil {
				c.add(Fail, "compactor "+p.ID(), "the host would refuse its answer, and not ask it again that run: %v (see Compaction in docs/plugins.md)", err)
			}
		}
	}
	for _, p := range contrib.Providers {
		c.provider(ctx, p)
	}
	for _, h := range contrib.Hooks {
		for _, point := range h.DecidePoints {
			site, pt, _ := strings.Cut(point, "/")
			start := time.Now()
			d, err := h.Decide(ctx, sdk.HookEvent{Site: site, Point: pt, Payload: samplePayload(point, c.opts.Cwd)})
			c.timed("hook "+h.ID()+" at "+point, time.Since(start), c.dl.Hook, err, fmt.Sprintf(" (%q)", d.Outcome))
			c.unstick(err, "")
		}
		for _, point := range h.ObservePoints {
			site, pt, _ := strings.Cut(point, "/")
			h.Observe(ctx, sdk.HookEvent{Site: site, Point: pt, Payload: samplePayload(point, c.opts.Cwd)})
			c.add(OK, "hook "+h.ID()+" at "+point, "sent an observation (no answer is due)")
		}
	}
	for i, s := range contrib.Services {
		c.service(ctx, s, decl.Services[i])
	}
}

// service calls the service s declared as d: with the author's input if
// there is one, else each method whose params d gives a schema for, with
// a sample built from it. A method with no schema is named as not called.
func (c *checker) service(ctx context.Context, s sdk.Service, d protocol.ServiceDecl) {
	subject := "service " + s.Key()
	if raw, ok := c.opts.Inputs[s.Key()]; ok {
		var in ServiceInput
		if err := json.Unmarshal(raw, &in); err != nil || in.Method == "" {
			c.add(Fail, subject, "the input for it must be {\"method\": …, \"params\": …}")
			return
		}
		c.serviceCall(ctx, s, in.Method, in.Params, "the input from --inputs")
		// --inputs gives one method's input: the others are named, not
		// silently left out.
		if others := slices.DeleteFunc(slices.Clone(d.Methods), func(m string) bool { return m == in.Method }); len(others) > 0 {
			c.add(Warn, subject, "%s not called: --inputs gives an input for %s only", strings.Join(others, ", "), in.Method)
		}
		return
	}
	var unsampled []string
	for _, m := range d.Methods {
		if _, ok := d.Params[m]; !ok {
			unsampled = append(unsampled, m)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(d.Params)) {
		v, ok := sample(d.Params[m])
		if !ok {
			c.add(Warn, subject, "%s not called: its params schema asks for params larger than a sample may be (%d KiB); give it an input with --inputs", m, sampleBudget>>10)
			continue
		}
		params, _ := json.Marshal(v)
		c.serviceCall(ctx, s, m, params, "the sample params "+string(params))
	}
	switch {
	case len(d.Params) == 0 && len(unsampled) == 0:
		c.add(Warn, subject, "not called: its declaration names no method and gives no params schema; "+
			"declare \"params\": {\"<method>\": {…JSON Schema…}}, or give it an input with --inputs ({%q: {\"method\": …, \"params\": …}})", s.Key())
	case len(unsampled) > 0:
		c.add(Warn, subject, "%s not called: the declaration gives no params schema for %s to build a sample from; "+
			"declare \"params\": {%q: {…JSON Schema…}}, or give it an input with --inputs", strings.Join(unsampled, ", "), them(len(unsampled)), unsampled[0])
	}
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// serviceCall calls method of s with params and times the answer. An
// error the plugin answers with is its answer, as a tool's own error is.
func (c *checker) serviceCall(ctx context.Context, s sdk.Service, method string, params json.RawMessage, from string) {
	start := time.Now()
	res, err := s.Call(ctx, method, params)
	what := " with " + from
	var rerr *bridge.RemoteError
	if errors.As(err, &rerr) {
		what += fmt.Sprintf(" (its own error answer: %d %s)", rerr.Code, render.Brief(rerr.Message, 100))
		err = nil
	} else if err == nil {
		what += " (" + render.Brief(string(res), 100) + ")"
	}
	c.timed("service "+s.Key()+" "+method, time.Since(start), c.dl.Service, err, what)
	c.unstick(err, "")
}

// toolInput is the author's input for a tool, or a sample built from its
// inputSchema; the second result says which (or why there is none).
func (c *checker) toolInput(spec sdk.ToolSpec) (json.RawMessage, string) {
	if raw, ok := c.opts.Inputs[spec.Name]; ok {
		return raw, "the input from --inputs"
	}
	v, ok := sample(spec.InputSchema)
	if !ok {
		return nil, fmt.Sprintf("its inputSchema asks for an input larger than a sample may be (%d KiB); give it an input with --inputs", sampleBudget>>10)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "its inputSchema does not describe an object; give it an input with --inputs"
	}
	raw, _ := json.Marshal(v)
	return raw, "the sample input " + string(raw)
}

// provider asks for one short answer and cancels it at the first delta.
func (c *checker) provider(ctx context.Context, p *proxy.Provider) {
	subject := "provider " + p.ID()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var first time.Duration
	var once sync.Once
	_, err := p.Stream(sctx, sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "Say hello in one word."}}},
		func(sdk.StreamEvent) { once.Do(func() { first = time.Since(start); cancel() }) })
	total := time.Since(start)
	switch {
	case first > 0 && errors.Is(err, context.Canceled):
		c.timed(subject, first, c.dl.Provider, nil, fmt.Sprintf(" with its first delta; cancelled then, it ended %s later", round(total-first)))
	case first > 0:
		c.timed(subject, first, c.dl.Provider, err, " with its first delta")
	default:
		c.timed(subject, total, c.dl.Provider, err, " with no delta")
	}
	c.unstick(err, "")
}

// unstick, after a call that failed with err, kills the instance that
// owes its answer if err says none came by the deadline, so that the steps
// after it meet a fresh instance rather than each waiting on the stuck one
// and failing in turn. tool, if not "", is the tool called: later steps
// call it no more.
func (c *checker) unstick(err error, tool string) {
	var dl *bridge.DeadlineError
	if !errors.As(err, &dl) {
		return
	}
	if tool != "" {
		c.stuck[tool] = true
	}
	if c.killLive() {
		c.rep.Findings[len(c.rep.Findings)-1].Message += "; killed the stuck instance, and the check goes on with a fresh one"
	}
}

// killLive kills the live instance and waits until the bridge has seen it
// die, so that the next call starts another. It says whether there was
// one.
func (c *checker) killLive() bool {
	conn := c.tap.last()
	if conn == nil {
		return false
	}
	conn.kill()
	conn.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for c.plugin.Status() == "running" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
