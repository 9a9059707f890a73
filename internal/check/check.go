package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/sdk"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/exec"
	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Levels of a Finding.
const (
	Fail = "fail"
	Warn = "warn"
	OK   = "ok"
)

// Finding is one thing the checker saw, in plain words.
type Finding struct {
	Level   string `json:"level"`   // fail, warn or ok
	Subject string `json:"subject"` // what it is about: "handshake", "tool count", "wire", …
	Message string `json:"message"`
	// Elapsed and Deadline time an answer, in milliseconds, where one was
	// timed.
	ElapsedMS  int64 `json:"elapsedMs,omitempty"`
	DeadlineMS int64 `json:"deadlineMs,omitempty"`
}

func (f Finding) String() string { return f.Subject + ": " + f.Message }

// Report is the checker's answer.
type Report struct {
	Dir       string    `json:"dir"`
	Plugin    string    `json:"plugin,omitempty"`
	Version   string    `json:"version,omitempty"`
	Transport string    `json:"transport,omitempty"`
	Conforms  bool      `json:"conforms"`
	Findings  []Finding `json:"findings"`
}

// Options say what to check and how.
type Options struct {
	Dir string // the plugin's own directory (holding plugin.json)
	// Cwd is the session's working directory the plugin is shown; "" is
	// the process's.
	Cwd string
	// Inputs are the author's inputs, by declared tool name (the tool's
	// input object) or service key ({"method": …, "params": …}).
	Inputs map[string]json.RawMessage
	// Home is the person's home directory. Answers are held to the
	// deadlines, and the plugin to the limits, that the person's settings
	// (and a trusted project's around Cwd) set for a run there, loaded by
	// the host's own rules (host.LoadSettings); "" holds them to the
	// host's defaults.
	Home string
	// CacheDir is the wasm compilation cache; "" compiles every time.
	CacheDir string
	// Environ is the environment an exec plugin inherits; nil is the
	// process's.
	Environ []string
}

// ServiceInput is what Options.Inputs holds for a service key.
type ServiceInput struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// checker is one run.
type checker struct {
	opts     Options
	dl       bounds.Deadlines
	limits   bounds.Limits
	bounds   wasm.Bounds // the person's: checking a plugin is their act
	rep      *Report
	tap      *tap
	stderr   *counter
	plugin   *bridge.Plugin
	mu       sync.Mutex
	starting bool
	notices  []bridge.Notice
	// took is how long each tool call answered in, by tool and input
	// (callKey): the cancel step's measure of the work it cancels.
	took map[string]time.Duration
	// stuck are the tools that did not answer by their deadline: their
	// instance was killed, and no later step calls them again.
	stuck map[string]bool
}

// CancelInput is the Options.Inputs key of the cancel step's call:
// {"tool": NAME, "input": {…}}, a call slow enough to be cancelled while
// it works. No tool or service is named so (a "/" is in neither).
const CancelInput = "tool/cancel"

// minCancellable is the shortest call the cancel step can judge: one that
// answers sooner ends about when a cancel would reach it.
const minCancellable = 100 * time.Millisecond

func callKey(tool string, input json.RawMessage) string { return tool + "\x00" + string(input) }

// Run checks the plugin in opts.Dir. The error is the checker's own
// trouble only; everything about the plugin is in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.Cwd == "" {
		if opts.Cwd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	c := &checker{opts: opts, rep: &Report{Dir: abs, Findings: []Finding{}}, tap: &tap{}, stderr: &counter{},
		dl: bounds.DefaultDeadlines(), limits: bounds.DefaultLimits(), took: map[string]time.Duration{}, stuck: map[string]bool{}}
	c.settings(ctx)
	c.run(ctx)
	c.rep.Conforms = true
	for _, f := range c.rep.Findings {
		if f.Level == Fail {
			c.rep.Conforms = false
		}
	}
	return c.rep, nil
}

// settings holds the check to the person's settings, saying which
// deadlines differ from the defaults and what the host had to say about
// the files.
func (c *checker) settings(ctx context.Context) {
	if c.opts.Home == "" {
		return
	}
	var notices []bridge.Notice
	s := host.LoadSettings(ctx, host.Config{Home: c.opts.Home, Cwd: c.opts.Cwd,
		Notify: func(n bridge.Notice) { notices = append(notices, n) }})
	c.dl, c.limits, c.bounds = s.Deadlines, s.Limits, s.WasmCompile.Bounds()
	for _, n := range notices {
		c.add(Warn, "settings", "%s", n.Message)
	}
	var differ []string
	def := bounds.DefaultDeadlines()
	for _, k := range settings.KeySpecs() {
		if top, sub, _ := strings.Cut(k.Path, "."); top == "deadlines" && sub != "" {
			if d, dd := settings.DeadlineField(&c.dl, sub), settings.DeadlineField(&def, sub); d != nil && *d != *dd {
				differ = append(differ, fmt.Sprintf("%s %s (default %s)", sub, showDeadline(*d), showDeadline(*dd)))
			}
		}
	}
	if len(differ) > 0 {
		c.add(OK, "settings", "held to the deadlines the settings in force set: %s", strings.Join(differ, ", "))
	}
}

// showDeadline writes a deadline as the findings give it: settings.Never,
// what "0" sets a key that takes it to, as never.
func showDeadline(d time.Duration) string {
	if d == settings.Never {
		return "never"
	}
	return d.String()
}

func (c *checker) add(level, subject, format string, args ...any) {
	c.rep.Findings = append(c.rep.Findings, Finding{Level: level, Subject: subject, Message: fmt.Sprintf(format, args...)})
}

// timed adds the finding of an answer that took elapsed against deadline:
// past it is a failure, past half of it worth a look.
func (c *checker) timed(subject string, elapsed, deadline time.Duration, err error, what string) {
	f := Finding{Subject: subject, ElapsedMS: elapsed.Milliseconds(), DeadlineMS: deadline.Milliseconds()}
	took := fmt.Sprintf("in %s (deadline %s)", round(elapsed), deadline)
	switch {
	case err != nil:
		f.Level, f.Message = Fail, fmt.Sprintf("failed after %s (deadline %s): %v", round(elapsed), deadline, err)
	case elapsed > deadline:
		f.Level, f.Message = Fail, "too slow: answered "+took
	case elapsed > deadline/2:
		f.Level, f.Message = Warn, "slow: answered "+took+what
	default:
		f.Level, f.Message = OK, "answered "+took+what
	}
	c.rep.Findings = append(c.rep.Findings, f)
}

// demote lowers the latest finding, if it is OK, to a warning saying why.
func (c *checker) demote(why string) {
	f := &c.rep.Findings[len(c.rep.Findings)-1]
	if f.Level == OK {
		f.Level = Warn
	}
	f.Message += why
}

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

func (c *checker) notify(n bridge.Notice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starting {
		c.notices = append(c.notices, n)
	}
}

func (c *checker) run(ctx context.Context) {
	m, err := manifest.Load(c.opts.Dir, "dir")
	if err != nil {
		c.add(Fail, "manifest", "%v", err)
		return
	}
	c.rep.Plugin, c.rep.Version, c.rep.Transport = m.Name, m.Version, m.Entry.Transport()
	// Checked with the handshake the host gives it (a package runner may
	// install it first).
	c.dl.Initialize = max(c.dl.Initialize, m.Entry.StartAllowance())
	proto := ""
	if m.Entry.Protocol == manifest.ProtocolMCP {
		proto = ", protocol mcp"
	}
	c.add(OK, "manifest", "%s is valid: %s %s, %s transport%s", m.File, m.Name, m.Version, m.Entry.Transport(), proto)

	shownURL := m.Entry.URL // as written: an expanded ${VAR} may be a secret
	// ${VAR} read in as the host reads it into a server it starts, from
	// the environment the checked plugin is given.
	m, err = m.Resolve(c.opts.Environ)
	if err != nil {
		c.add(Fail, "start", "%v", err)
		return
	}
	var tr transport.Transport
	switch m.Entry.Transport() {
	case manifest.TransportHTTP:
		tr = mcphttp.New(mcphttp.Config{URL: m.Entry.URL, Shown: shownURL, Headers: m.Entry.Headers, Log: c.stderr.log()})
	case manifest.TransportWasm:
		wh, err := wasm.NewHost(context.WithoutCancel(ctx), wasm.HostConfig{CacheDir: c.opts.CacheDir})
		if err != nil {
			c.add(Fail, "start", "%v", err)
			return
		}
		defer wh.Close(context.Background())
		// A first start compiles the module, which the host does not
		// count against the handshake's deadline: neither does the check.
		compileStart := time.Now()
		if err := wh.Compile(ctx, m.Entry.Wasm, c.bounds); err != nil {
			c.add(Fail, "start", "%v", err)
			return
		}
		c.add(OK, "compile", "the module is compiled (%s; cached after a first start)", time.Since(compileStart).Round(time.Millisecond))
		if bin, err := os.ReadFile(m.Entry.Wasm); err == nil && wasm.SignalWatcherUnstoppable(bin) {
			c.add(Warn, "signal", "a Go guest that calls signal.Notify, built with -ldflags=-s: the host cannot find its signal watcher (the name section is stripped), "+
				"and once it waits for stdin it never reads again; build it without -s, or call signal.Notify only when runtime.GOOS is not wasip1")
		}
		// As the host mounts it: never ~/.bingo.
		dir := c.opts.Cwd
		var hide string
		if c.opts.Home != "" {
			hide = filepath.Join(c.opts.Home, ".bingo")
		}
		if err := host.Private(c.opts.Home, dir); err != nil {
			c.add(Warn, "sandbox", "the working directory is not mounted: %v", err)
			dir = ""
		}
		tr = wh.Transport(wasm.Config{Path: m.Entry.Wasm, Name: m.Name, Args: m.Entry.Args, Env: m.Entry.Env,
			Dir: dir, Hide: hide, Stderr: c.stderr, InstantiateTimeout: c.dl.Initialize, Bounds: c.bounds})
	default:
		tr = exec.New(exec.Config{Command: m.Entry.Command, Args: m.Entry.Args, Env: m.Environ(c.opts.Environ),
			Dir: c.opts.Cwd, Stderr: c.stderr})
	}
	if m.Entry.Protocol == manifest.ProtocolMCP {
		// Checked as the host runs it: behind the translator, whose wire
		// is the one tapped.
		tr = mcpbridge.Wrap(tr, mcpbridge.Config{Name: m.Name, Version: m.Version, Log: c.stderr.log(), Deadlines: c.dl})
	}
	opts := bridge.Options{
		Name: m.Name, Root: m.Root, Transport: &tapTransport{tr, c.tap}, Env: m.Entry.Env,
		Deadlines: c.dl, Limits: c.limits, Notify: c.notify, Log: c.stderr.log(), Services: c.services,
		// The check kills instances itself (one stuck, the respawn step):
		// those deaths are no crash loop, and the next call starts a fresh
		// instance at once rather than after a backoff.
		Backoff: bridge.Backoff{Initial: time.Nanosecond, Max: time.Nanosecond},
	}
	if m.Entry.Protocol == manifest.ProtocolMCP {
		opts.Probe = mcpbridge.Probe
	}
	c.plugin = bridge.New(opts)
	defer c.wire() // the wire is read last, whatever happened
	defer c.close()

	c.starting = true
	start := time.Now()
	_, err = c.plugin.Start(ctx)
	elapsed := time.Since(start)
	c.mu.Lock()
	c.starting = false
	notices := c.notices
	c.mu.Unlock()
	c.handshake()
	if err != nil {
		msg := err.Error()
		if tail := c.stderr.tail(); tail != "" {
			msg += "; its stderr ends: " + tail
		}
		c.add(Fail, "handshake", "%s", msg)
		return
	}
	c.timed("handshake", elapsed, c.dl.Initialize, nil, "")
	for _, n := range notices {
		c.add(Fail, "declaration", "%s (the host refuses it)", n.Message)
	}
	c.exercise(ctx)
	c.cancel(ctx)
	c.respawn(ctx)
}

// close stops the plugin and says whether it left when its stdin closed.
func (c *checker) close() {
	done := make(chan error, 1)
	go func() { done <- c.plugin.Close() }()
	select {
	case err := <-done:
		if err != nil {
			c.add(Warn, "exit", "could not stop it cleanly: %v", err)
		}
	case <-time.After(c.dl.Grace + 10*time.Second):
		c.add(Fail, "exit", "still running %s after its stdin closed", c.dl.Grace+10*time.Second)
		return
	}
	// A wasm instance is ended by its transport once its stdin closes.
	if conn := c.tap.last(); conn != nil && !conn.killedByUs() && c.rep.Transport == manifest.TransportExec {
		if err := conn.Wait(); err != nil {
			c.add(Warn, "exit", "did not exit cleanly when its stdin closed: %v", err)
		}
	}
}

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
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := c.tap.watch(`"callId":"` + id + `"`)
	var cancelled time.Time
	go func() {
		select {
		case <-sent:
			cancelled = time.Now()
			cancel()
		case <-cctx.Done():
		}
	}()
	elapsed, err := call(cctx, id)
	cancelSeen := c.tap.saw("host", `"method":"tool/cancel"`)
	after := time.Since(cancelled)
	if cancelled.IsZero() {
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

// ui is a tool call's CallUI with no one behind it.
type ui struct{}

func (ui) Progress(string) {}
func (ui) Ask(context.Context, string) (string, error) {
	return "", errors.New("no one to ask while checking")
}

func sampleConversation() []sdk.Message {
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "line %d: the quick brown fox jumps over the lazy dog\n", i+1)
	}
	return []sdk.Message{
		{Role: sdk.RoleUser, Content: "How many words are in notes.txt?"},
		{Role: sdk.RoleAssistant, Content: "notes.txt has 9 words."},
		{Role: sdk.RoleUser, Content: "And show me its lines."},
		{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{{ID: "check-1", Name: "plugin__files__read", Input: json.RawMessage(`{"path":"notes.txt"}`)}}},
		{Role: sdk.RoleTool, ToolCallID: "check-1", Content: lines.String()},
	}
}

// samplePayload is a payload of the shape the host sends at point.
func samplePayload(point, cwd string) json.RawMessage {
	call := sdk.ToolCall{ID: "check-hook", Name: "plugin__other__tool", Input: json.RawMessage(`{"path":"notes.txt"}`), Cwd: cwd, Session: "check", Turn: 1}
	var v any
	switch point {
	case sdk.ToolBefore.String():
		v = call
	case sdk.PromptBefore.String():
		v = sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "How many words are in notes.txt?"}}}
	case sdk.ToolAfter.String():
		v = map[string]any{"call": call, "output": sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart("notes.txt: 9 words")}}}
	case sdk.TurnEnd.String():
		v = map[string]any{"turn": 1, "steps": 1, "text": "notes.txt has 9 words."}
	default:
		v = map[string]any{}
	}
	raw, _ := json.Marshal(v)
	return raw
}

// sampleBudget bounds a sample, counted as the bytes of its strings and
// one for each value: the sizes it is built to (minLength, minItems,
// nested) are the plugin's to name, and it is built in memory before it
// is sent.
const sampleBudget = 64 << 10

// sample is a value the JSON Schema s accepts, as far as its common
// keywords say: a const, an enum's first value, a default, or by type
// (an object holds its required properties). ok is false if the schema
// asks for more than sampleBudget.
func sample(s json.RawMessage) (v any, ok bool) {
	left := sampleBudget
	v = sampleOf(s, 0, &left)
	return v, left >= 0
}

// sampleOf builds sample's value, taking what it builds from *left; once
// that is below zero, what it returns is cut short and not to be sent.
func sampleOf(s json.RawMessage, depth int, left *int) any {
	if *left--; *left < 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(s)) == 0 {
		return map[string]any{}
	}
	if json.Unmarshal(s, &m) != nil || depth > 8 {
		return map[string]any{}
	}
	pick := func(key string) (any, bool) {
		raw, ok := m[key]
		if !ok {
			return nil, false
		}
		var v any
		return v, json.Unmarshal(raw, &v) == nil
	}
	if raw, ok := m["const"]; ok {
		var v any
		json.Unmarshal(raw, &v)
		return v
	}
	if raw, ok := m["enum"]; ok {
		var vs []any
		if json.Unmarshal(raw, &vs) == nil && len(vs) > 0 {
			return vs[0]
		}
	}
	if raw, ok := m["default"]; ok {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var alts []json.RawMessage
		if raw, ok := m[key]; ok && json.Unmarshal(raw, &alts) == nil && len(alts) > 0 {
			return sampleOf(alts[0], depth+1, left)
		}
	}
	typ := ""
	if t, ok := pick("type"); ok {
		switch t := t.(type) {
		case string:
			typ = t
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					typ = s
					break
				}
			}
		}
	}
	if typ == "" {
		typ = "object"
	}
	num := func(key string) (float64, bool) {
		v, ok := pick(key)
		f, isNum := v.(float64)
		return f, ok && isNum
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		var props map[string]json.RawMessage
		json.Unmarshal(m["properties"], &props)
		var required []string
		json.Unmarshal(m["required"], &required)
		sort.Strings(required)
		for _, name := range required {
			if obj[name] = sampleOf(props[name], depth+1, left); *left < 0 {
				return nil
			}
		}
		return obj
	case "string":
		s := "sample"
		if n, ok := num("minLength"); ok && n > float64(len(s)) {
			if n > float64(*left) {
				*left = -1
				return nil
			}
			s += strings.Repeat("x", int(n)-len(s))
		}
		if n, ok := num("maxLength"); ok && n >= 0 && n < float64(len(s)) {
			s = s[:int(n)]
		}
		*left -= len(s)
		return s
	case "integer", "number":
		if n, ok := num("minimum"); ok {
			return n
		}
		if n, ok := num("exclusiveMinimum"); ok {
			return n + 1
		}
		if n, ok := num("maximum"); ok && n < 1 {
			return n
		}
		return 1
	case "boolean":
		return false
	case "array":
		if n, ok := num("minItems"); ok && n > 0 {
			if n > float64(*left) {
				*left = -1
				return nil
			}
			items := make([]any, int(n))
			for i := range items {
				if items[i] = sampleOf(m["items"], depth+1, left); *left < 0 {
					return nil
				}
			}
			return items
		}
		return []any{}
	case "null":
		return nil
	}
	return map[string]any{}
}
