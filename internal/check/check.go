package check

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
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
	// Environ is the environment the plugin's is drawn from; nil is the
	// process's. The plugin is given, for its process and its ${VAR}s,
	// only what the person's settings in Home give it there
	// (host.Resolve).
	Environ []string
}

// ServiceInput is what Options.Inputs holds for a service key.
type ServiceInput struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// checker is one run.
type checker struct {
	opts   Options
	dl     bounds.Deadlines
	limits bounds.Limits
	bounds wasm.Bounds // the person's: checking a plugin is their act
	// set are the settings in force, whose sandbox grants an exec
	// plugin is confined by as in a run.
	set      settings.Settings
	rep      *Report
	tap      *tap
	stderr   *counter
	plugin   *bridge.Plugin
	mu       sync.Mutex
	starting bool
	notices  []bridge.Notice
	refused  []bridge.Notice // the sandbox's, under mu
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
		dl: bounds.DefaultDeadlines(), limits: bounds.DefaultLimits(), set: settings.Default(), took: map[string]time.Duration{}, stuck: map[string]bool{}}
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
	c.set, c.dl, c.limits, c.bounds = s, s.Deadlines, s.Limits, s.WasmCompile.Bounds()
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
	// the environment the checked plugin is given: withheld variables and
	// the provider's key are not in it.
	m, environ, err := host.Resolve(c.opts.Home, m, c.opts.Environ)
	if err != nil {
		c.add(Fail, "start", "%v", err)
		return
	}
	// A data directory, made and granted as a run makes and grants the
	// plugin's, but a throwaway one, removed once the plugin is stopped:
	// the check calls the plugin with the author's inputs and kills it,
	// and may be of a copy that shares an installed plugin's name, so the
	// person's own (~/.bingo/data/plugins/<name>) is left as it was.
	dataDir, err := os.MkdirTemp("", "bingo-check-"+m.Name+"-")
	if err != nil {
		c.add(Fail, "start", "cannot make its data directory: %v", err)
		return
	}
	defer os.RemoveAll(dataDir)
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
		// Confined as a run confines it, by the same grants: never
		// ~/.bingo.
		cfg := host.ConfineWasm(host.Config{Home: c.opts.Home, Cwd: c.opts.Cwd, Notify: c.sandboxNotice}, c.set, m, dataDir, c.stderr)
		cfg.Dir = c.opts.Cwd
		if err := host.Private(c.opts.Home, cfg.Dir); err != nil {
			c.add(Warn, "sandbox", "the working directory is not mounted: %v", err)
			cfg.Dir = ""
		}
		cfg.Path, cfg.Name, cfg.Args, cfg.Env = m.Entry.Wasm, m.Name, m.Entry.Args, m.Entry.Env
		cfg.Stderr, cfg.InstantiateTimeout, cfg.Bounds = c.stderr, c.dl.Initialize, c.bounds
		tr = wh.Transport(cfg)
	default:
		// Confined as a run confines it, by the same grants (the
		// person's sandbox.<name> and the manifest's permissions): what
		// the check passes is what runs.
		conf, err := host.Confine(host.Config{Home: c.opts.Home, Cwd: c.opts.Cwd, Notify: c.sandboxNotice}, c.set, m, dataDir, c.stderr)
		if conf.Egress != nil {
			defer conf.Egress.Close()
		}
		if err != nil {
			c.add(Fail, "start", "%v", err)
			return
		}
		if conf.Less != "" {
			c.add(Warn, "sandbox", "runs with less than the default sandbox (%s): %s", conf.Isolation, conf.Less)
		} else if conf.Isolation != "" {
			c.add(OK, "sandbox", "runs confined as a run confines it (%s)", conf.Isolation)
		}
		tr = exec.New(exec.Config{Command: m.Entry.Command, Args: m.Entry.Args, Env: m.Environ(environ),
			Dir: c.opts.Cwd, Stderr: c.stderr, Sandbox: conf.Sandbox})
	}
	if m.Entry.Protocol == manifest.ProtocolMCP {
		// Checked as the host runs it: behind the translator, whose wire
		// is the one tapped.
		tr = mcpbridge.Wrap(tr, mcpbridge.Config{Name: m.Name, Version: m.Version, Log: c.stderr.log(), Deadlines: c.dl})
	}
	opts := bridge.Options{
		Name: m.Name, Root: m.Root, Transport: &tapTransport{tr, c.tap}, Env: m.Entry.Env, DataDir: dataDir,
		Deadlines: c.dl, Limits: c.limits, Raise: c.notify, Log: c.stderr.log(), Services: c.services,
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
	c.mu.Lock()
	refused := c.refused
	c.mu.Unlock()
	for _, n := range refused {
		c.add(Warn, "sandbox", "%s", n.Message)
	}
}

// sandboxNotice keeps what the sandbox said it refused (a host not
// granted), for the findings once the steps are done: it is said from the
// egress proxy's goroutines.
func (c *checker) sandboxNotice(n bridge.Notice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = append(c.refused, n)
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
