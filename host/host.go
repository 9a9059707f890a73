package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/declcache"
	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/internal/egress"
	"github.com/bingo/bingo-plugin-rpc/internal/oauth"
	"github.com/bingo/bingo-plugin-rpc/internal/par"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/mcpbridge"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/exec"
	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Config says where the host runs. Home and Cwd are required.
type Config struct {
	Home       string   // the person's home: ~/.bingo lives here
	Cwd        string   // the session's working directory
	PluginDirs []string // extra plugin layers for this run (--plugin-dir)
	Allow      []string // extra allow rules for this run (--allow)
	Environ    []string // the host's environment; nil = os.Environ()
	// Notify receives every notice (plugin deaths, refusals, broken
	// manifests, a plugin's own notice); within a turn, each once, and
	// one that repeated again at the turn's end with its count (see
	// Host.Turn). It must be safe for concurrent use.
	Notify func(bridge.Notice)
	// Session names this run's session.
	Session string
	// Trace writes every wire line of every plugin, both ways, into that
	// plugin's log (--trace, BINGO_TRACE=1).
	Trace bool
	// AskTrust, if set, is asked once whether to trust an untrusted
	// project whose exec plugins would start (a terminal's prompt). Nil
	// means no one can answer: the plugins are not started and one
	// notice says how to trust the project.
	AskTrust func(context.Context, TrustQuestion) (bool, error)
	// TrustedThisRun are the PluginDirs that lie inside a project the person has
	// not trusted (UntrustedProject) and that the person said to run this
	// once (--trust, or yes at the terminal): their plugins are listed as
	// trusted for this run, not as the person's own.
	TrustedThisRun []string
	// SlowCompile, if set, is called with a wasm plugin's name when its
	// start has waited more than SlowCompileAfter (0:
	// wasm.DefaultSlowCompileAfter) for the module's compilation (a first
	// start). It must be safe for concurrent use.
	SlowCompile      func(plugin string)
	SlowCompileAfter time.Duration
	// Backoff spaces the respawns of a plugin that keeps dying (zero: the
	// bridge's defaults). A program that kills plugins on purpose, as the
	// soak test does, shortens it.
	Backoff bridge.Backoff
	// Terminal: a person is at a terminal, so a remote server that asks
	// for authorization opens the browser, after a notice saying why
	// (without one, only where $BROWSER is set: package internal/oauth).
	// Stderr gets the authorization URL; nil is os.Stderr.
	Terminal bool
	Stderr   io.Writer
}

// PluginInfo describes one discovered plugin.
type PluginInfo struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Layer     string `json:"layer"`
	Dir       string `json:"dir"`
	Transport string `json:"transport"`
	// Protocol is what the plugin speaks: "bingo" or "mcp" (an MCP
	// server, translated by package mcpbridge).
	Protocol string `json:"protocol"`
	Status   string `json:"status"` // running, idle, dead, not started, failed, shadowed, …
	Error    string `json:"error,omitempty"`
	// Isolation is how an exec plugin or stdio MCP server is confined:
	// "landlock+netns+pidns" (the default), fewer of them joined by "+",
	// or "none" (docs/plugins.md); "" for a plugin of another transport.
	Isolation string `json:"isolation,omitempty"`
	// Asks is what its manifest asks for beyond the default sandbox
	// (manifest.Permissions), granted by trusting or installing it; ""
	// for nothing.
	Asks string `json:"asks,omitempty"`
	// Trust is "trusted", "untrusted" or "untrusted (sandboxed)" for a
	// project plugin, "this run" for a --plugin-dir's inside a project the
	// person has not trusted (Config.TrustedThisRun), and "" for the person's own
	// and other --plugin-dir ones.
	Trust string `json:"trust,omitempty"`
	Log   string `json:"log"`
	// Contributes lists what the plugin contributes, e.g. "tool
	// plugin__wordcount__count": its providers, hooks, contributors and
	// compactors first, what reaches furthest into the person's session.
	Contributes []string `json:"contributes"`
	// ToolDefinitionBytes is what the definitions of the tools it offers
	// the model cost each request (agent.DefinitionSize, what
	// turn.toolsMax counts): a tool a deny rule covers is not offered,
	// and is marked "(denied)" in Contributes.
	ToolDefinitionBytes int `json:"toolDefinitionBytes"`
}

// loaded is a plugin the host found, started or not.
type loaded struct {
	m      *manifest.Manifest
	plugin *bridge.Plugin // nil if it could not even be built
	log    *LogFile
	exec   *exec.Transport // nil unless it runs as a process: Quit signals it
	err    error
	key    declcache.Key    // its declaration's key in the cache
	cached *declcache.Entry // its declaration as cached, if current: it is not started at Open
	// isolation is how an exec plugin is confined ("landlock+netns+pidns",
	// "landlock", "none", …), and less why that is less than its
	// sandbox asks for, or "" (shepherd.Isolation).
	isolation, less string
	// egress is its proxy to the hosts it is granted by name, if any.
	egress *egress.Proxy
}

// Host owns the plugins of one run and the registry of what they
// contribute, and runs the conversation over them (its Agent, package
// agent). It is safe for concurrent use once Open has returned.
type Host struct {
	*agent.Agent

	cfg       Config
	turnNotes *turnNotices // cfg.Notify's: each notice once a turn
	settings  settings.Settings
	gate      *gate.Gate
	wasmMu    sync.Mutex // held while Open's builds make wasm
	wasm      *wasm.Host
	// privateCwd says once that wasm plugins do not see the working
	// directory (sandboxCwd).
	privateCwd sync.Once

	trust *projectTrust
	// projectDecls caps what the project's plugins declare together.
	projectDecls *bridge.DeclarationBudget
	// untrustedMemory is the memory an untrusted project's wasm plugins
	// share: a repository shipping many costs what one budget does.
	untrustedMemory *wasm.MemoryBudget
	sums            *trust.Sums      // every file digested this run, read once
	decls           *declcache.Cache // what each plugin declared last time
	env             envRule          // what of cfg.Environ each plugin is given
	skipped         []string         // settings files not applied for an error: what they set is not in force
	plugins         []*loaded
	held            map[string]*manifest.Manifest // untrusted project plugins held back, by the name the person's copy keeps
	reg             *registry.Registry

	observers sync.WaitGroup // hook observations in flight
	obsMu     sync.Mutex
	obsTail   chan struct{} // closed when the latest observation has been sent

	closeOnce sync.Once

	unredirect sync.Map // "owner\x00hook\x00point" of an untrusted redirect already noticed
}

// Open loads settings and manifests and registers what each plugin
// declares. A plugin whose declaration is cached and current (package
// declcache) is registered from the cache and not started: the first use
// of one of its contributions starts it. The others are started, in
// parallel, and what they declare is cached. Problems with one plugin (a
// broken manifest, a failed handshake) are notices, never the run's
// failure; Open fails only when the host itself cannot work (an invalid
// --allow rule).
func Open(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.Notify == nil {
		cfg.Notify = func(bridge.Notice) {}
	}
	turnNotes := &turnNotices{say: cfg.Notify}
	cfg.Notify = turnNotes.notify
	if cfg.Session == "" {
		cfg.Session = fmt.Sprintf("s%d", time.Now().UnixNano())
	}
	notify := cfg.Notify
	project, layers := projectOf(cfg)
	found, problems := manifest.Discover(layers)
	for _, p := range problems {
		notify(bridge.Notice{Level: "error", Message: p.Error() + "; skipped"})
	}
	sums := trust.NewSums()
	// The person's own file is read first: the environment each plugin is
	// given is its alone, and a project's entries are resolved by it to
	// be pinned.
	user := settings.ReadUser(userSettingsFile(cfg.Home))
	trust := assessTrust(ctx, cfg, project, found, sums, envRuleOf(user.Settings(), cfg.Environ))
	found, held := trust.holdBack(cfg, found)
	for _, m := range found {
		for _, sh := range m.Shadows {
			notify(bridge.Notice{Plugin: m.Name, Level: "warn", Message: fmt.Sprintf("the %s layer's copy (%s) shadows the %s layer's (%s)",
				m.Layer, m.Root, sh.Layer, sh.Root)})
		}
	}
	s, env, skipped := loadSettings(cfg, user, project, trust, found)
	g, err := gate.New(s.Permissions, cfg.Allow, trust.untrustedNames()...)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, turnNotes: turnNotes, settings: s, gate: g, trust: trust, env: env, skipped: skipped, sums: sums, held: held,
		decls: declcache.New(filepath.Join(cfg.Home, ".bingo", "data", "cache", "declarations"), sums)}
	h.projectDecls = bridge.NewDeclarationBudget(MaxProjectDeclarations, "this project's plugins")
	h.untrustedMemory = wasm.NewMemoryBudget(s.UntrustedWasm.MemoryMiB, "this untrusted project's wasm plugins",
		"untrustedWasm.memoryMiB in your ~/.bingo/settings.json raises it")
	ranks := map[string]int{}
	for _, m := range found {
		ranks[m.Name] = h.rank(m)
	}
	h.reg = registry.New(notify, func(owner string) int { return ranks[owner] })
	h.Agent = h.newAgent() // its commands are the host's own, which win their names

	// Built in parallel: keying each plugin's cached declaration reads
	// its files and its cache entry, and with many installed that is most
	// of what a run that starts nothing does.
	h.plugins = make([]*loaded, len(found))
	par.Each(len(found), func(i int) { h.plugins[i] = h.build(ctx, found[i]) })
	h.sayLessIsolated()
	// The cache keeps a file per plugin name: one uninstalled or renamed
	// would keep its file forever. Whether a name this run did not find
	// is gone, or another project's, its entries' files say (Prune); a
	// day's wait between looks keeps the reading off most runs.
	h.decls.PruneIfDue(func(name string) bool { _, ok := ranks[name]; return ok })

	// Start in parallel: a slow plugin does not add its start-up to every
	// other's, and a failed one costs one notice. A cached one says again
	// what was refused of its declaration, as its start would.
	var eg errgroup.Group
	for _, l := range h.plugins {
		switch {
		case l.plugin == nil:
			continue
		case l.cached != nil && l.cached.Failed != "":
			// Its files make it fail its handshake: said again, from
			// the cache, without paying for its start.
			l.err = errors.New(l.cached.Failed)
			notify(bridge.Notice{Plugin: l.m.Name, Level: "error", Message: "not loaded: " + l.cached.Failed})
			continue
		case l.cached != nil:
			for _, msg := range l.cached.Refused {
				notify(bridge.Notice{Plugin: l.m.Name, Level: "warn", Message: msg})
			}
			continue
		}
		eg.Go(func() error {
			decl, err := l.plugin.Start(ctx)
			if err != nil {
				l.err = err
				notify(bridge.Notice{Plugin: l.m.Name, Level: "error", Message: "not loaded: " + err.Error()})
				if ie := (*bridge.IdentityError)(nil); errors.As(err, &ie) {
					if err := h.decls.StoreFailure(l.key, err.Error()); err != nil {
						fmt.Fprintf(l.log, "bingo: %v\n", err)
					}
				}
				return nil
			}
			h.cache(l, decl)
			return nil
		})
	}
	eg.Wait()
	// Registration order decides command clashes: the plugin of the
	// higher rank wins (see rank), then name order.
	order := append([]*loaded(nil), h.plugins...)
	sort.SliceStable(order, func(i, j int) bool { return h.rank(order[i].m) > h.rank(order[j].m) })
	for _, l := range order {
		if l.plugin != nil && l.err == nil {
			h.reg.Add(l.m.Name, l.plugin.Contributions())
		}
	}
	return h, nil
}

// MaxProjectDeclarations caps, in bytes, what a project's plugins declare
// together (bridge.DeclarationBudget): with manifest.MaxProjectPlugins and
// bridge.MaxDeclaration it bounds what a repository's declarations can
// make the host hold.
const MaxProjectDeclarations = 4 << 20

// build makes a plugin's transport and bridge, without starting it.
func (h *Host) build(ctx context.Context, m *manifest.Manifest) *loaded {
	l := &loaded{m: m}
	trusted := h.trust.trusted(m)
	if !trusted && m.Entry.Transport() != manifest.TransportWasm {
		// A repository's process runs with the person's rights, and its
		// remote server is reached from the person's machine: not before
		// the person trusts it. Its log is not even opened.
		l.err = errUntrusted
		return l
	}
	// A remote server's URL as notices and its log show it: as written,
	// since an expanded ${VAR} may be a secret.
	shownURL := m.Entry.URL
	env := h.env.of(m.Name)
	if trusted {
		// ${VAR} in an MCP server's entry reads only what the plugin is
		// given of the person's environment, and only into what the
		// person trusts (manifest.Manifest.Resolve).
		r, _, err := h.env.resolve(m)
		if err != nil {
			l.err = err
			h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "error", Message: "not loaded: " + l.err.Error()})
			return l
		}
		m = r
	}
	log := NewLog(h.logPath(m), DefaultLogCap, func(err error) {
		h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "warn", Message: fmt.Sprintf("its log cannot be written (%v); what it says there is lost", err)})
	})
	l.log = log
	// The plugin's own writable directory, made by each start of it
	// (dataDirFirst). A project's plugin the person has not trusted gets
	// none: its name is the project's choice, and the person's plugin of
	// that name keeps its state there.
	var dataDir string
	if trusted {
		dataDir = filepath.Join(h.cfg.Home, ".bingo", "data", "plugins", m.Name)
	}
	var tr transport.Transport
	// A declaration is keyed by the project, not the working directory: a
	// plugin is told the directory with each call, never at its handshake,
	// so a new subdirectory of the same repository starts nothing (but
	// for an MCP server, whose root it is: see mcp).
	start := declcache.Start{Transport: m.Entry.Transport(), Root: m.Root, DataDir: dataDir, Dir: h.keyDir(),
		Config: h.settings.Plugins[m.Name]}
	// The directory an MCP server is offered as its root: the working
	// directory where the server can reach it (a wasm server sees it only
	// where it is mounted); a remote server is offered none, since a path
	// on this machine names nothing there and says where the person works.
	root := h.cfg.Cwd
	switch m.Entry.Transport() {
	case "wasm":
		wh, err := h.wasmHost(ctx)
		if err != nil {
			l.err = err
			h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "error", Message: "not loaded: " + err.Error()})
			return l
		}
		// An untrusted project's module runs in the default sandbox:
		// what the person granted a plugin of that name is not for it.
		// Nor is it compiled under wider bounds than the defaults.
		// Its memory comes out of what the project's untrusted modules
		// share.
		var grant settings.Sandbox
		bounds := settings.DefaultWasmCompile().Bounds()
		bounds.CompileWall = untrustedCompileWall
		budget := h.untrustedMemory
		if trusted {
			grant = h.grantOf(m)
			bounds = h.settings.WasmCompile.Bounds()
			budget = nil
		}
		cwd := h.sandboxCwd()
		root = cwd
		box := h.confineWasm(m, dataDir, grant, log)
		var slow func()
		if h.cfg.SlowCompile != nil {
			name := m.Name
			slow = func() { h.cfg.SlowCompile(name) }
		}
		// The bridge bounds the handshake, not Transport.Start, and a
		// respawn starts without a deadline: the module's start function,
		// which runs inside Start, gets the handshake's deadline too.
		for k, v := range m.Entry.Env {
			start.Env = append(start.Env, k+"="+v)
		}
		cfg := wasm.Config{
			Path: m.Entry.Wasm, Name: m.Name, Args: m.Entry.Args, Env: m.Entry.Env,
			Dir: cwd, Writable: box.Writable, Mounts: box.Mounts, Hide: box.Hide, MemoryLimitMiB: box.MemoryLimitMiB, Budget: budget, Stderr: log,
			InstantiateTimeout: h.settings.Deadlines.Initialize, SlowCompile: slow, SlowCompileAfter: h.cfg.SlowCompileAfter,
			Bounds: bounds,
		}
		// Everything else the module is given is in the key (wasmNotKeyed).
		start.Grants = declcache.Fields(cfg, wasmNotKeyed...)
		tr = wh.Transport(cfg)
	case manifest.TransportHTTP:
		root = ""
		cfg := mcphttp.Config{URL: m.Entry.URL, Shown: shownURL, Headers: m.Entry.Headers, Log: log}
		if !oauth.Manages(m.Entry) {
			// A server that asks is authorized by OAuth (internal/oauth),
			// unless the entry gives its own Authorization header.
			o := oauth.ForEntry(m.Name, m.Entry, h.cfg.Home)
			o.Shown, o.Terminal, o.Stderr = shownURL, h.cfg.Terminal, h.cfg.Stderr
			if o.Stderr == nil {
				o.Stderr = os.Stderr
			}
			name := m.Name
			o.Say = func(msg string) { h.cfg.Notify(bridge.Notice{Plugin: name, Level: "info", Message: msg}) }
			oh, err := oauth.Handle(o)
			if err != nil {
				l.err = err
				h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "error", Message: "not loaded: its stored authorization: " + err.Error()})
				return l
			}
			cfg.OAuth = oh
		}
		tr = mcphttp.New(cfg)
	default:
		if m.Entry.Protocol == manifest.ProtocolMCP {
			env = withConfig(env, h.settings.Plugins[m.Name])
		}
		start.Env = m.Environ(env)
		c, err := h.confine(m, dataDir, log)
		l.egress, l.isolation, l.less = c.Egress, c.Isolation, c.Less
		if err != nil {
			l.err = err
			h.cfg.Notify(bridge.Notice{Plugin: m.Name, Level: "error", Message: err.Error()})
			return l
		}
		l.exec = exec.New(exec.Config{
			Command: m.Entry.Command, Args: m.Entry.Args, Env: start.Env,
			Dir: h.cfg.Cwd, Stderr: &refusals{LogFile: log, name: m.Name, notify: h.cfg.Notify}, Sandbox: c.Sandbox,
		})
		tr = l.exec
	}
	if m.Entry.Protocol == manifest.ProtocolMCP {
		tr = h.mcp(m, tr, trusted, root, log, &start)
	}
	if dataDir != "" {
		tr = dataDirFirst{tr, dataDir}
	}
	var budget *bridge.DeclarationBudget
	if m.Layer == manifest.LayerProject {
		budget = h.projectDecls
	}
	opts := bridge.Options{
		Name: m.Name, Root: m.Root, Transport: tr,
		Config: h.settings.Plugins[m.Name], Env: m.Entry.Env, DataDir: dataDir,
		Deadlines: launchedDeadlines(m, h.settings.Deadlines), Limits: h.settings.Limits,
		Raise: h.cfg.Notify, Log: log, LogPath: log.Path(), Trace: h.cfg.Trace, Budget: budget, Backoff: h.cfg.Backoff,
		Services: h.routeService,
		Redeclared: func(decl protocol.InitializeResult, handshake bool) {
			h.reg.Replace(m.Name, l.plugin.Contributions())
			if handshake {
				h.cache(l, decl)
			}
		},
	}
	if m.Entry.Protocol == manifest.ProtocolMCP {
		opts.Probe = mcpbridge.Probe // the translator answers for the server past a deadline
	}
	var problem error
	l.key, l.cached, problem = h.decls.Lookup(m, start)
	// A cached failure (Entry.Failed) is not started: Open says why.
	failed := l.cached != nil && l.cached.Failed != ""
	if l.cached != nil && !failed && budget != nil {
		// A cached declaration counts as a handshake's would: past the
		// budget the plugin is started, and refused there with why.
		if budget.Take(m.Name, len(l.cached.Declaration)) != nil {
			l.cached = nil
		}
	}
	if l.cached != nil && !failed {
		decl, err := l.cached.Decode()
		if err != nil {
			problem = fmt.Errorf("declaration cache: the cached declaration cannot be read (%v); starting the plugin instead", err)
			l.cached = nil
		} else {
			opts.Declared = &decl
		}
	}
	if problem != nil {
		fmt.Fprintf(log, "bingo: %v\n", problem)
	}
	l.plugin = bridge.New(opts)
	return l
}

// Close stops every plugin and releases the wasm runtime. It is
// idempotent: a second caller waits for the first one's Close to finish.
func (h *Host) Close() error {
	h.closeOnce.Do(func() { h.close(false) })
	return nil
}

// Leave is Close for a process about to exit: it does not wait for exec
// plugins under a shepherd to stop. Each has its stdin closed, as at
// Close, and its shepherd finishes the stop sequence (exec.Transport's
// Leave): the plugin gets its grace, and nothing it started outlives the
// sequence, but bingo exits once it has answered.
func (h *Host) Leave() error {
	h.closeOnce.Do(func() { h.close(true) })
	return nil
}

// Quit stops every plugin within about d, however they behave, for a
// person who asked to quit now: Close (the end of stdin, then each
// transport's own stop sequence) for the first half of d, then SIGTERM to
// every exec plugin's process group, then SIGKILL at d. It returns once
// Close has finished, or right after the SIGKILL; the Close still running
// then is left to the process's exit.
func (h *Host) Quit(d time.Duration) {
	done := make(chan struct{})
	go func() { defer close(done); h.Close() }()
	t := time.NewTimer(d / 2)
	defer t.Stop()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for _, l := range h.plugins {
			if l.exec != nil {
				l.exec.Signal(sig)
			}
		}
		t.Reset(d - d/2)
	}
}

func (h *Host) close(leaving bool) {
	// Observations still on their way are delivered first: a turn/end
	// observation is sent just before the run ends. Each send is bounded
	// (a plugin not reading is killed after Grace), so this wait is too.
	h.observers.Wait()
	if leaving {
		for _, l := range h.plugins {
			if l.exec != nil {
				l.exec.Leave()
			}
		}
	}
	var wg sync.WaitGroup
	for _, l := range h.plugins {
		if l.plugin != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// What Close could not do goes to the plugin's log: bingo is
				// ending, and a notice would reach no one.
				if err := l.plugin.Close(); err != nil && l.log != nil {
					fmt.Fprintf(l.log, "bingo: %v\n", err)
				}
			}()
		}
	}
	wg.Wait()
	if h.Agent != nil {
		h.Agent.Close()
	}
	if h.wasm != nil {
		h.wasm.Close(context.Background())
	}
	for _, l := range h.plugins {
		if l.egress != nil {
			_ = l.egress.Close()
		}
		if l.log != nil {
			l.log.Close()
		}
	}
}

// Settings are the merged settings in force.
func (h *Host) Settings() settings.Settings { return h.settings }

// Gate is the permission gate.
func (h *Host) Gate() *gate.Gate { return h.gate }

// Registry is what the plugins contribute.
func (h *Host) Registry() *registry.Registry { return h.reg }

// Cwd is the session's working directory.
func (h *Host) Cwd() string { return h.cfg.Cwd }

// Session names the session.
func (h *Host) Session() string { return h.cfg.Session }

// newAgent is the conversation over h's plugins.
func (h *Host) newAgent() *agent.Agent {
	return agent.New(agent.Config{Plugins: h, Registry: h.reg, Gate: h.gate, Turn: h.settings.Turn,
		Cwd: h.cfg.Cwd, Session: h.cfg.Session, Notify: h.cfg.Notify,
		ResultsDir: filepath.Join(h.cfg.Home, ".bingo", "data", "results"),
		NotInForce: h.notInForce()})
}

// Untrusted reports whether owner is a plugin of a project the person has
// not trusted.
func (h *Host) Untrusted(owner string) bool { return h.trust.untrustedOwner(owner) }

// HowToTrust says how to trust the project.
func (h *Host) HowToTrust() string { return howToTrust(h.trust.root) }

// notice raises a host notice.
func (h *Host) notice(level, format string, args ...any) {
	h.cfg.Notify(bridge.Notice{Level: level, Message: fmt.Sprintf(format, args...)})
}
