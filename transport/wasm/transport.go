package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/transport"
)

// DefaultMemoryLimitMiB is the memory cap of an instance whose Config says 0.
const DefaultMemoryLimitMiB = 256

// DefaultInstantiateTimeout bounds the instantiation of a Config that says
// 0. It is the bingo host's default handshake deadline
// (deadlines.initialize).
const DefaultInstantiateTimeout = 10 * time.Second

// Config describes one wasm plugin. The zero values of the optional fields
// are the sandbox's defaults; anything wider is a person's grant, never a
// manifest's.
type Config struct {
	// Path is the .wasm file (a WASI preview1 command exporting _start).
	Path string
	// Name is the plugin's name: argv[0] and the subject of every error.
	Name string
	// Args is argv[1:].
	Args []string
	// Env is the only environment the guest sees; the host's never leaks in.
	Env map[string]string
	// Dir is the session's working directory, mounted read-only at its own
	// path so that paths mean the same inside and out. It is also the
	// guest's working directory (a Go guest takes its first pre-opened
	// directory). "" mounts nothing.
	Dir string
	// Writable mounts Dir read-write instead (a person's grant).
	Writable bool
	// Mounts are further directories, each mounted at its own absolute
	// path after Dir, read-only unless Writable (the bingo host mounts the
	// plugin's data directory read-write and its root read-only). A path
	// mounted already (Dir itself, or an earlier mount) is not mounted
	// again: the first mount of it decides. Inside the guest the longest
	// mount that is a prefix of a path serves it.
	Mounts []Mount
	// Hide is a directory the guest never sees (the bingo host passes
	// ~/.bingo): a mount that holds it serves it as not there (hidingFS),
	// as it does the host's /proc, /sys and /dev. A mount of Hide, or
	// inside it, is the caller's to refuse or allow; Start refuses a
	// mount of one of those three, or inside one, or inside a file
	// system of the host's such as a chroot's proc (HostDir).
	Hide string
	// MemoryLimitMiB caps the guest's linear memory; 0 means
	// DefaultMemoryLimitMiB.
	MemoryLimitMiB int
	// Budget, if set, is memory this plugin's instances share with those
	// of every other Config naming it: a grow past what it has left is
	// refused as one past MemoryLimitMiB is.
	Budget *MemoryBudget
	// Stderr receives the plugin's log; nil discards it. Writes from
	// concurrent instances of one Transport are serialised.
	Stderr io.Writer
	// InstantiateTimeout bounds the instantiation in Start, which runs the
	// module's start function: the module's own code before Start returns.
	// 0 means DefaultInstantiateTimeout. The bingo host passes
	// deadlines.initialize. Compiling is not bounded by it (see the
	// package doc).
	InstantiateTimeout time.Duration
	// SlowCompile, if set, is called (on its own goroutine, at most once
	// per Start) when Start has waited SlowCompileAfter for the module to
	// be read and compiled: a first start, as a later one finds the
	// compilation done. The bingo CLI says "compiling <plugin> (first
	// start)…" on a terminal.
	SlowCompile func()
	// SlowCompileAfter is how long Start waits for a compilation before
	// it calls SlowCompile; 0 means DefaultSlowCompileAfter.
	SlowCompileAfter time.Duration
	// Bounds cap what compiling the module may cost; a zero field means
	// its DefaultBounds value. Wider bounds are for a module the person
	// trusts.
	Bounds Bounds
}

// DefaultSlowCompileAfter is the SlowCompileAfter used when Config leaves
// it zero: long enough that a warm start never says anything.
const DefaultSlowCompileAfter = 300 * time.Millisecond

// Mount is one directory the guest sees at its own absolute path.
type Mount struct {
	Dir      string
	Writable bool
}

// ErrKilled is wrapped by the Wait error of an instance ended by Kill (or by
// closing its Host).
var ErrKilled = transport.ErrKilled

// ErrMemoryLimit is wrapped by the Wait error of an instance that died
// because it needed more memory than its limit.
var ErrMemoryLimit = errors.New("memory limit")

// Transport starts instances of one wasm plugin in its Host's runtime. It
// implements transport.Transport and is safe for concurrent use.
type Transport struct {
	h      *Host
	cfg    Config
	stderr io.Writer
}

var _ transport.Transport = (*Transport)(nil)

// Transport returns a transport for the plugin cfg describes. Nothing is
// read or compiled until the first Start; errors surface there.
func (h *Host) Transport(cfg Config) *Transport {
	cfg.Args = slices.Clone(cfg.Args)
	var stderr io.Writer = io.Discard
	if cfg.Stderr != nil {
		stderr = &lockedWriter{w: cfg.Stderr}
	}
	return &Transport{h: h, cfg: cfg, stderr: stderr}
}

// Kind implements transport.Transport.
func (*Transport) Kind() string { return "wasm" }

func (t *Transport) instantiateTimeout() time.Duration {
	if t.cfg.InstantiateTimeout <= 0 {
		return DefaultInstantiateTimeout
	}
	return t.cfg.InstantiateTimeout
}

func (t *Transport) memoryLimit() uint64 {
	mib := t.cfg.MemoryLimitMiB
	if mib <= 0 {
		mib = DefaultMemoryLimitMiB
	}
	return uint64(mib) << 20
}

// Start implements transport.Transport: it compiles the module if this Host
// has not yet (once per module content), instantiates it in the sandbox and
// runs _start on a goroutine the returned Conn owns. ctx bounds the start
// only, and Config.InstantiateTimeout the instantiation: Start returns
// promptly once either ends, stopping a start function still running.
func (t *Transport) Start(ctx context.Context) (transport.Conn, error) {
	name := t.cfg.Name
	if ctx.Err() != nil {
		return nil, t.cutShort(ctx)
	}
	var slow *time.Timer
	if t.cfg.SlowCompile != nil {
		after := t.cfg.SlowCompileAfter
		if after <= 0 {
			after = DefaultSlowCompileAfter
		}
		slow = time.AfterFunc(after, t.cfg.SlowCompile)
	}
	bounds := t.cfg.Bounds.withDefaults()
	cm, err := t.h.compiled(ctx, t.cfg.Path, bounds)
	if slow != nil {
		slow.Stop()
	}
	var notMod *notModuleError
	var bound *BoundError
	switch {
	case err == nil:
	case errors.Is(err, ErrHostClosed):
		return nil, fmt.Errorf("wasm plugin %s: start: %w", name, err)
	case ctx.Err() != nil:
		return nil, t.cutShort(ctx)
	case errors.As(err, &notMod):
		return nil, fmt.Errorf("wasm plugin %s: %w", name, err)
	case errors.As(err, &bound):
		return nil, fmt.Errorf("wasm plugin %s: %s refused: %w", name, t.cfg.Path, withKey(err, bounds))
	default:
		return nil, fmt.Errorf("wasm plugin %s: compile %s: %w", name, t.cfg.Path, err)
	}
	limit := t.memoryLimit()
	if err := checkMinimumMemory(cm, limit); err != nil {
		return nil, fmt.Errorf("wasm plugin %s: %w", name, err)
	}
	if cm.ExportedFunctions()["_start"] == nil {
		return nil, fmt.Errorf("wasm plugin %s: %s exports no _start: not a WASI command", name, t.cfg.Path)
	}
	if missing := t.h.missingImports(cm); len(missing) > 0 {
		more := ""
		if len(missing) > 3 {
			missing, more = missing[:3], fmt.Sprintf(" and %d more", len(missing)-3)
		}
		return nil, fmt.Errorf("wasm plugin %s: %s imports %s%s, which bingo does not provide: a wasm plugin may import only wasi_snapshot_preview1",
			name, t.cfg.Path, strings.Join(missing, ", "), more)
	}

	fsc, roots, err := t.mounts()
	if err != nil {
		return nil, fmt.Errorf("wasm plugin %s: %w", name, err)
	}

	// A Go guest waiting for input must park in poll_oneoff, so that its
	// other goroutines keep running (answering a request while the reader
	// waits for the next); a guest whose every read blocks its only thread
	// and that reads on one goroutine while another answers deadlocks.
	// A metered guest's stdin is a memPipe, which the meter's shim lets
	// the guest make non-blocking, and which wakes it without an OS
	// thread; an unmetered one's is an OS pipe, which wazero lets it poll.
	var in stdinEnd
	mem := &memoryCap{limit: limit, budget: t.cfg.Budget}
	ictx, cancel := context.WithCancel(experimental.WithMemoryAllocator(context.Background(), mem))
	if t.h.unmetered {
		if in, err = newOSStdin(); err != nil {
			cancel()
			for _, r := range roots {
				_ = r.Close()
			}
			return nil, fmt.Errorf("wasm plugin %s: stdin pipe: %w", name, err)
		}
	} else {
		s := newMemPipe()
		in, ictx = s, withStdin(ictx, s)
	}
	// The guest's stdout: a guest with no input waiting hands each line
	// to the host's reader and waits for it to be read; one with input
	// waiting writes ahead (memPipe says why).
	out := newMemPipe()
	out.handoff = func() bool { return !in.waiting() }
	c := &conn{
		name: name, in: in, out: out,
		cancel: cancel, mem: mem, roots: roots, h: t.h, done: make(chan struct{}),
	}
	if !t.h.track(c) {
		c.release()
		return nil, fmt.Errorf("wasm plugin %s: start: %w", name, ErrHostClosed)
	}

	stderr := &fatalLine{w: t.stderr}
	c.fatal = stderr
	mc := wazero.NewModuleConfig().
		WithName("").         // many instances of one module share the runtime
		WithStartFunctions(). // _start runs on the Conn's goroutine, not here
		WithArgs(append([]string{name}, t.cfg.Args...)...).
		WithStdin(in.guestEnd()).
		WithStdout(out).
		WithStderr(stderr).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(sleepUntilDone(ictx)).
		WithRandSource(rand.Reader)
	keys := make([]string, 0, len(t.cfg.Env))
	for k := range t.cfg.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		mc = mc.WithEnv(k, t.cfg.Env[k])
	}

	// The instance outlives ctx, but its instantiation must not: the
	// module's start function runs inside InstantiateModule, and a start
	// function that loops stops only when the context it runs under ends.
	ctx, cancelStart := context.WithTimeoutCause(ctx, t.instantiateTimeout(), errInstantiateTimeout)
	defer cancelStart()
	detach := context.AfterFunc(ctx, cancel)
	mod, err := t.h.rt.InstantiateModule(ictx, cm, mc)
	if !detach() || err != nil {
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		c.release()
		switch {
		case c.killed.Load(): // only Host.Close kills an instance still starting
			return nil, fmt.Errorf("wasm plugin %s: start: %w", name, ErrHostClosed)
		case ctx.Err() != nil:
			return nil, t.cutShort(ctx)
		}
		return nil, fmt.Errorf("wasm plugin %s: instantiate %s: %w", name, t.cfg.Path, err)
	}
	if why := mem.startRefused(name); why != "" {
		_ = mod.Close(context.Background())
		c.release()
		return nil, &plainError{msg: why, err: ErrMemoryLimit}
	}
	go c.run(ictx, mod)
	return c, nil
}

// sleepUntilDone is a guest's sleep (poll_oneoff with a clock, or with
// descriptors all ready at once; wasi-libc's sleep), which wakes when ctx,
// the instance's, ends: Kill, Host.Close, or a start past its deadline.
// wazero's own (WithSysNanosleep) is time.Sleep, which nothing ends: a
// guest asleep outlived its Kill, and bingo waited for it for ever.
// ModuleConfig.WithNanosleep is wazero's place for it; it gets no
// context, so each instance gets its own. wazero's poll_oneoff asks for
// the longest sleep there is (math.MaxInt64) when its subscriptions had no
// clock and were all ready at once: that is no wait at all, and it returns
// at once (a guest that polls so in a loop spins, metered, like any loop).
func sleepUntilDone(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		if ns <= 0 || ns == math.MaxInt64 || ctx.Err() != nil {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// errInstantiateTimeout is the cause of an instantiation context whose
// InstantiateTimeout, not the caller's deadline, ran out.
var errInstantiateTimeout = errors.New("instantiate timeout")

// cutShort is the error of a start whose context ended: one line naming
// the plugin, the file and what to do, with the context's error underneath
// for errors.Is.
func (t *Transport) cutShort(ctx context.Context) error {
	name, path := t.cfg.Name, t.cfg.Path
	var msg string
	switch {
	case context.Cause(ctx) == errInstantiateTimeout:
		msg = fmt.Sprintf("%s was still starting after %s: its start function does not return; fix the module or remove the plugin", path, t.instantiateTimeout())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("the start of %s was cut short by its caller's deadline", path)
	default:
		msg = fmt.Sprintf("the start of %s was cancelled", path)
	}
	return &plainError{msg: "wasm plugin " + name + ": " + msg, err: ctx.Err()}
}

// checkMinimumMemory refuses a limit the module cannot even start under,
// with a message that says which number to raise.
func checkMinimumMemory(cm wazero.CompiledModule, limit uint64) error {
	defs := make([]api.MemoryDefinition, 0, 1)
	for _, d := range cm.ExportedMemories() {
		defs = append(defs, d)
	}
	defs = append(defs, cm.ImportedMemories()...)
	for _, d := range defs {
		if need := uint64(d.Min()) << 16; need > limit {
			return fmt.Errorf("memory limit of %d MiB is below the module's minimum of %d pages (%.1f MiB): raise the plugin's memory limit",
				limit>>20, d.Min(), float64(need)/(1<<20))
		}
	}
	return nil
}

// conn is one running instance. The goroutine running _start (run) owns
// the module; Kill only signals it.
type conn struct {
	name   string
	in     stdinEnd
	inOnce sync.Once
	out    *memPipe // the guest's stdout
	cancel context.CancelFunc
	mem    *memoryCap
	fatal  *fatalLine
	roots  []io.Closer // the mounts' roots
	h      *Host

	killOnce sync.Once
	killed   atomic.Bool
	done     chan struct{}
	err      error // set before done is closed
}

func (c *conn) Read(p []byte) (int, error) { return c.out.Read(p) }
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.in.Write(p)
	if err != nil && c.killed.Load() {
		err = ErrKilled
	}
	return n, err
}

// Close closes the guest's stdin: a well-behaved guest reads EOF and exits.
func (c *conn) Close() error {
	c.closeStdin()
	return nil
}

// closeStdin closes the host's end of the guest's stdin, once: the guest
// reads EOF, and a guest parked in poll_oneoff on it wakes.
func (c *conn) closeStdin() { c.inOnce.Do(c.in.closeWrite) }

// Wait returns once _start has returned and the instance is released.
func (c *conn) Wait() error {
	<-c.done
	return c.err
}

// Kill ends the instance now. Cancelling the context stops a guest that is
// running wasm code (the runtime closes on context done), but not one
// parked in fd_read on its stdin, so Kill also breaks the stdin pipe; and
// it breaks stdout, so that neither a guest blocked writing nor a host
// blocked reading waits for the other.
func (c *conn) Kill() error {
	c.killOnce.Do(func() {
		c.killed.Store(true)
		c.cancel()
		c.closeStdin()
		c.out.breakRead(ErrKilled)
	})
	return nil
}

func (c *conn) run(ctx context.Context, mod api.Module) {
	_, err := mod.ExportedFunction("_start").Call(ctx)
	c.err = c.reason(err)
	// The guest is gone: its stdout ends and its stdin refuses.
	c.out.closeWrite()
	_ = mod.Close(context.Background())
	c.release()
}

// release frees what Start acquired; it runs once, on the path that owns
// the instance at that point.
func (c *conn) release() {
	c.cancel()
	c.closeStdin()
	c.in.release()
	c.mem.release() // no guest code of it runs any more
	for _, r := range c.roots {
		_ = r.Close()
	}
	c.h.untrack(c)
	close(c.done)
}

// reason turns how _start returned into the Wait error: nil for exit 0,
// otherwise one error that names the plugin and says why it died.
func (c *conn) reason(err error) error {
	if c.killed.Load() {
		return fmt.Errorf("wasm plugin %s: %w", c.name, ErrKilled)
	}
	if err == nil {
		return nil
	}
	var exit *sys.ExitError
	if !errors.As(err, &exit) {
		// wazero's trap error goes on with the stack, a line a frame (a
		// stack overflow lists them all): the frames go to the log, the
		// Wait error (a person's notice) keeps the first line.
		msg := err.Error()
		if first, frames, ok := strings.Cut(msg, "\n"); ok {
			fmt.Fprintf(c.fatal.w, "wasm plugin %s: trap: %s\n%s\n", c.name, first, frames)
			msg = first + " (its stack is in its log)"
		}
		return &plainError{msg: fmt.Sprintf("wasm plugin %s: trap: %s", c.name, clip(msg, maxTrapLine)), err: err}
	}
	if exit.ExitCode() == 0 {
		return nil
	}
	switch c.mem.refused.Load() {
	case refusedLimit:
		return &plainError{
			msg: fmt.Sprintf("wasm plugin %s: %v of %d MiB reached (exit code %d)", c.name, ErrMemoryLimit, c.mem.limit>>20, exit.ExitCode()),
			err: errors.Join(ErrMemoryLimit, exit),
		}
	case refusedBudget:
		return &plainError{
			msg: c.mem.budgetError(c.name, fmt.Sprintf(" (exit code %d)", exit.ExitCode())),
			err: errors.Join(ErrMemoryLimit, exit),
		}
	}
	msg := fmt.Sprintf("wasm plugin %s: exit code %d", c.name, exit.ExitCode())
	if line := c.fatal.get(); line != "" {
		msg += ": " + line
	}
	return &plainError{msg: msg, err: exit}
}

// maxTrapLine caps what a trap's Wait error quotes of wazero's message, so
// that the notice it becomes stays one short line.
const maxTrapLine = 120

// clip is s with its control characters as spaces, cut to at most max
// bytes (on a rune boundary) with "…".
func clip(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// plainError is a message for people with the error underneath for
// errors.As / errors.Is: a Wait error over its *sys.ExitError (or trap),
// or a Start cut short over its context's error.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }
