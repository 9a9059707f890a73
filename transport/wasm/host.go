package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// HostConfig configures a Host. Its zero value is a host without a disk
// cache: modules are still compiled only once per Host.
type HostConfig struct {
	// CacheDir is the on-disk compilation cache, shared by every Host that
	// names it (the bingo host passes ~/.bingo/data/cache/wasm). "" means no
	// disk cache.
	CacheDir string
	// TerminationChecks replaces the meter with wazero's own termination
	// checks (WithCloseOnContextDone), as this package ran guests before
	// the meter: a Go guest's code runs about three times slower, and
	// recursion without a loop is never stopped, and a Go guest's signal
	// watcher is not stopped (signal.go). It exists so that a
	// benchmark can measure the meter against what it replaced, in the
	// same run; nothing else should set it.
	TerminationChecks bool
	// Compiler is the program run as the compile child (CompileChildArg)
	// to compile, under the Transport's Bounds, a module the Host has not
	// compiled before. "" means this executable, which must then handle
	// CompileChildArg first thing. Only a Host with a CacheDir uses it:
	// the compiled code comes back through the disk cache.
	Compiler string
}

// ErrHostClosed is returned by Start once the Host is closed.
var ErrHostClosed = errors.New("wasm host closed")

// Host owns one wazero runtime, the WASI imports instantiated in it, the
// modules compiled in it and every instance started from it. Transports
// made by one Host share all of those. A Host is safe for concurrent use.
type Host struct {
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	cacheDir string // HostConfig.CacheDir
	// compiledDir marks each module content this build of the host has
	// compiled, so that it need not be compiled in a child again: its
	// code is in wazero's disk cache. "" with no child.
	compiledDir string
	compiler    string // the compile child's program; "" compiles in this process
	// childSlot holds the one compile child that runs at a time: each
	// uses every core, and their memory bounds would add up.
	childSlot chan struct{}
	meterDir  string             // where metered modules are kept by content; "" keeps none
	sums      fileversion.SumDir // where module files' sums are kept (sums.go); "" keeps none
	unmetered bool               // HostConfig.TerminationChecks
	// now is the clock that says whether a file had settled when read
	// (keepSum): time.Now, which a test moves on rather than wait.
	now func() time.Time
	// life ends when Close begins: it cancels the compilations in flight
	// and wakes every Start waiting for one.
	life    context.Context
	endLife context.CancelFunc

	mu        sync.Mutex
	closed    bool
	files     map[string]*file     // by path: the version last seen; replaced when the file changes
	modules   map[[32]byte]*module // by content (sha256): one compilation each
	live      map[*conn]struct{}   // instances not yet ended
	compiling sync.WaitGroup       // compilations using the runtime; Add only under mu while open

	reads    atomic.Int32 // module files opened and read, for tests and diagnostics
	unread   atomic.Int32 // module files loaded by a kept sum instead, likewise
	compiles atomic.Int32 // CompileModule calls, for tests and diagnostics
	children atomic.Int32 // compile children started, likewise
}

// file is one version of one module file: its identity (os.SameFile) and
// its fileversion (on Linux its status-change time too, so that a rewrite
// that keeps the size and sets the modification time back is another
// version, as it is to the sums kept on disk). It is read and hashed once, by the first
// Start that finds this version, and every Start that finds it again
// shares the result. done is closed when mod or err is set.
type file struct {
	fi   fs.FileInfo // guarded by Host.mu
	done chan struct{}
	mod  *module
	err  error
}

// is reports whether fi is the version f was made for.
func (f *file) is(fi fs.FileInfo) bool {
	return os.SameFile(f.fi, fi) && fileversion.Of(f.fi).ID == fileversion.Of(fi).ID
}

// module is one compilation of one module content, shared by every file
// with those bytes, whatever its path. done is closed when cm/err are set.
type module struct {
	done chan struct{}
	cm   wazero.CompiledModule
	err  error
}

// NewHost creates the runtime. The runtime closes a module when the context
// of its running call is done (see the package doc for why that is not
// optional), and compiles through the cache in cfg.CacheDir if one is set.
func NewHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm host: compilation cache %s: %w", cfg.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	// No CloseOnContextDone: every module is metered instead (package wasmmeter),
	// which stops a guest as surely at a fraction of the cost.
	rc := wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(cfg.TerminationChecks)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasm host: instantiate WASI: %w", err)
	}
	if err := instantiateMeter(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasm host: instantiate the meter: %w", err)
	}
	life, endLife := context.WithCancel(context.Background())
	// A kept sum is worth something only with the metered module kept
	// beside it: with neither, a start reads the module anyway.
	meterDir, sumsDir := "", ""
	if cfg.CacheDir != "" && !cfg.TerminationChecks {
		meterDir = filepath.Join(cfg.CacheDir, meterCacheVersion)
		sumsDir = filepath.Join(cfg.CacheDir, sumsCacheVersion)
	}
	// Without a disk cache the child's work could not come back; an
	// unmetered Host exists for benchmarks only.
	compiler := ""
	if cfg.CacheDir != "" && !cfg.TerminationChecks {
		compiler = cfg.Compiler
		if compiler == "" {
			compiler = defaultCompiler()
		}
	}
	return &Host{
		cacheDir:    cfg.CacheDir,
		compiledDir: compiledDir(cfg.CacheDir, compiler),
		compiler:    compiler,
		childSlot:   make(chan struct{}, 1),
		unmetered:   cfg.TerminationChecks,
		meterDir:    meterDir,
		sums:        fileversion.SumDir(sumsDir),
		now:         time.Now,
		rt:          rt,
		cache:       cache,
		life:        life,
		endLife:     endLife,
		files:       map[string]*file{},
		modules:     map[[32]byte]*module{},
		live:        map[*conn]struct{}{},
	}, nil
}

// Close kills every live instance, waits for them to end (bounded by ctx)
// and closes the runtime and the cache. A compilation using the runtime is
// cancelled and waited for (wazero stops between functions); one still
// reading its file is not: it ends, unused, once its read does. Close is
// idempotent.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	live := make([]*conn, 0, len(h.live))
	for c := range h.live {
		live = append(live, c)
	}
	h.mu.Unlock()
	h.endLife()

	for _, c := range live {
		_ = c.Kill()
	}
	for _, c := range live {
		select {
		case <-c.done:
		case <-ctx.Done():
			// Closing the runtime below still closes the modules.
		}
	}
	h.compiling.Wait()
	err := h.rt.Close(ctx)
	if cerr := h.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// compiled returns the module compiled from the file at path.
//
// Compilation is keyed by the module's content: the sha256 of the bytes
// read. Plugins that ship the same module at different paths share one
// compilation, and there is exactly one CompileModule call per content per
// Host. That is not only thrift: wazero publishes a module it loads from
// the disk cache to concurrent callers before the module is ready (wazero
// issue #2547), so two concurrent compilations of one module can hand an
// instance a module without its entry points, which panics when the
// instance calls a function. One compilation per content never makes two.
//
// Each version of a file (identity, mtime, size) is read and hashed once;
// a Start that finds the version it saw before only stats the file, so a
// respawn neither reads nor hashes. With a disk cache, neither does a new
// Host's first Start of a version a Host read before (sums.go).
// Concurrent callers share the read and the compilation. ctx bounds only
// this caller's wait, never the shared work: a compilation outlives a
// caller who gives up, so that the next Start finds it done, but not the
// Host.
func (h *Host) compiled(ctx context.Context, path string, b Bounds) (wazero.CompiledModule, error) {
	b = b.withDefaults() // every path below applies b: none may apply a zero bound
	fi, err := statModule(path)
	if err != nil {
		return nil, err
	}
	if limit := int64(b.ModuleMiB) << 20; fi.Size() > limit {
		return nil, &BoundError{Bound: BoundModuleMiB, Limit: limit, Size: fi.Size()}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHostClosed
	}
	f := h.files[path]
	if f == nil || !f.is(fi) {
		f = &file{fi: fi, done: make(chan struct{})}
		h.files[path] = f
		go h.load(path, fi, f, b)
	}
	h.mu.Unlock()

	if err := h.await(ctx, f.done); err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	if err := h.await(ctx, f.mod.done); err != nil {
		return nil, err
	}
	return f.mod.cm, f.mod.err
}

// missingImports names, as module.name, each import of cm that no module
// the Host instantiated provides (wasi_snapshot_preview1, and the meter's
// own in a metered module): wazero would refuse the module with
// "module[env] not instantiated", which names no import.
func (h *Host) missingImports(cm wazero.CompiledModule) []string {
	var missing []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if m := h.rt.Module(mod); m == nil || m.ExportedFunctionDefinitions()[name] == nil {
			missing = append(missing, mod+"."+name)
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		missing = append(missing, mod+"."+name+" (a memory)")
	}
	return missing
}

// Compile compiles the module at path under b, or finds it compiled (in
// this Host or the cache directory), so that a Start after it pays no
// compilation: for a caller that times a plugin's start apart from its
// first compilation, as `bingo plugins check` does.
func (h *Host) Compile(ctx context.Context, path string, b Bounds) error {
	b = b.withDefaults()
	_, err := h.compiled(ctx, path, b)
	return withKey(err, b)
}

// await waits for done, for the caller's ctx or for the Host to close.
func (h *Host) await(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.life.Done():
		return ErrHostClosed
	}
}

// load reads one version of a module file on its own goroutine, so that a
// caller giving up (ctx) does not abandon work other callers wait for, and
// so that Close never waits for a read. A version (fi, as stat saw it)
// whose sum is kept, with the metered module kept under that sum, is not
// read at all.
func (h *Host) load(path string, fi fs.FileInfo, f *file, b Bounds) {
	if h.loadKept(path, fi, f, b) {
		return
	}
	h.reads.Add(1)
	readAt := h.now() // before the open's stat: see keepSum
	r, opened, err := openModule(path)
	if err != nil {
		f.err = err
		close(f.done)
		return
	}
	defer r.Close()
	h.loadFrom(path, r, opened, f, readAt, b)
}

// loadKept joins f to the compilation of the content whose sum is kept for
// the version fi, without reading the file: that compilation when the Host
// has it, else one of the metered module kept under the sum, under b like
// any other. It reports false, having done nothing, when either is not
// kept.
func (h *Host) loadKept(path string, fi fs.FileInfo, f *file, b Bounds) bool {
	key, ok := h.keptSum(path, fi)
	if !ok {
		return false
	}
	var bin []byte
	if !h.has(key) {
		if bin, ok = h.keptMetered(key); !ok {
			return false
		}
	}
	return h.join(f, nil, key, bin, true, b)
}

// has reports whether the Host has a compilation of the content key, done
// or under way.
func (h *Host) has(key [32]byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.modules[key] != nil
}

// loadFrom reads a module from r (fi describes the opened file: its size
// sizes the buffer, and it is the version recorded; readAt is when the
// read began, for keepSum), hashes it, keeps the sum, and joins the
// compilation of that content, starting it if there is none. The read may
// take as long as the file system does, so Close does not wait for it;
// the compilation uses the runtime, so Close cancels it and waits.
func (h *Host) loadFrom(path string, r io.Reader, fi fs.FileInfo, f *file, readAt time.Time, b Bounds) {
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	bin, err := readModule(path, r, size)
	if err != nil {
		f.err = err
		close(f.done)
		return
	}
	if limit := int64(b.ModuleMiB) << 20; int64(len(bin)) > limit {
		f.err = &BoundError{Bound: BoundModuleMiB, Limit: limit, Size: int64(len(bin))} // it grew since its stat
		close(f.done)
		return
	}
	key := sha256.Sum256(bin)
	if fi != nil {
		h.keepSum(path, fi, key, readAt)
	}
	h.join(f, fi, key, bin, false, b)
}

// join makes f the version fi (nil: as it is) of the content key and
// joins the compilation of key, starting it from bin, under b, if there
// is none.
// With kept, the file was not read: key is its kept sum, and bin, if not
// nil, the metered module kept under it. With bin nil it starts none: it
// reports false, having done nothing, if there is none to join.
func (h *Host) join(f *file, fi fs.FileInfo, key [32]byte, bin []byte, kept bool, b Bounds) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		f.err = ErrHostClosed
		close(f.done)
		return true
	}
	m := h.modules[key]
	fresh := m == nil
	if fresh && bin == nil {
		// The compilation seen a moment ago failed and was forgotten.
		h.mu.Unlock()
		return false
	}
	if fi != nil {
		f.fi = fi // the version actually read
	}
	if fresh {
		m = &module{done: make(chan struct{})}
		h.modules[key] = m
		h.compiling.Add(1)
	}
	h.mu.Unlock()
	if kept {
		h.unread.Add(1) // before f.done: a Start that sees it done sees this
	}
	f.mod = m
	close(f.done)
	if fresh {
		h.compile(key, m, bin, kept, b)
	}
	return true
}

// compile compiles one content, once, from bin: the module as read, which
// it meters first, or with metered its metered form, kept from an earlier
// Host. One that this build of the host compiled before (compiledBefore)
// has its code in wazero's disk cache, and loading it costs about what
// reading it does. Any other is compiled first in a compile child under b
// (compileInChild), unless it is remembered as over b already: a kept
// metered module too, as the wazero that compiled it may not be this one. A compilation that fails is forgotten by
// content (the file version that failed keeps its error), so that a new
// version of the file, or another plugin with the same bytes found later,
// tries again: the failure may have been the disk cache's, or a bound
// another plugin's bounds are wider than.
func (h *Host) compile(key [32]byte, m *module, bin []byte, metered bool, b Bounds) {
	defer h.compiling.Done()
	defer close(m.done)
	h.compiles.Add(1)
	// Compile functions in parallel: a cold compile of a Go guest is the
	// longest wait a person sees from a wasm plugin. The workers check the
	// context between functions, which is what makes Close prompt.
	ctx := experimental.WithCompilationWorkers(h.life, runtime.GOMAXPROCS(0))
	kept := metered // bin is a metered module from the disk cache
	if !h.unmetered {
		if refused := h.refused(key, b); refused != nil {
			m.err = refused
		} else if !metered {
			bin, kept, m.err = h.metered(key, bin, b.funcCaps())
		}
	}
	if m.err == nil && h.compiler != "" && !h.compiledBefore(key) {
		m.err = h.compileInChild(h.life, key, bin, b)
	}
	if m.err == nil {
		m.cm, m.err = h.rt.CompileModule(ctx, bin)
	}
	switch {
	case m.err == nil:
		if !kept && !h.unmetered {
			h.keepMetered(key, bin)
		}
		h.markCompiled(key)
		return
	case h.life.Err() != nil:
		m.err = ErrHostClosed
	case kept:
		// A kept module wazero refuses is not kept on: the next Host
		// meters the original afresh.
		_ = os.Remove(h.meteredPath(key))
	}
	h.mu.Lock()
	if h.modules[key] == m {
		delete(h.modules, key)
	}
	h.mu.Unlock()
}

// compiledDir is where a Host with a compile child marks what it
// compiled: under the cache directory, by the running build, as wazero's
// own cache is by its version.
func compiledDir(cacheDir, compiler string) string {
	if compiler == "" {
		return ""
	}
	build := sha256.Sum256([]byte(fileversion.Executable()))
	return filepath.Join(cacheDir, compiledVersion, hex.EncodeToString(build[:8]))
}

// compiledVersion names the directory of the marks.
const compiledVersion = "compiled-v1"

// compiledBefore reports whether this build of the host compiled the
// module whose original's sha256 is key, so that its code is in the disk
// cache.
func (h *Host) compiledBefore(key [32]byte) bool {
	if h.compiledDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(h.compiledDir, hex.EncodeToString(key[:])))
	return err == nil
}

// markCompiled marks the module whose original's sha256 is key as
// compiled by this build: an empty file.
func (h *Host) markCompiled(key [32]byte) {
	if h.compiledDir != "" {
		_ = diskrecord.Replace(filepath.Join(h.compiledDir, hex.EncodeToString(key[:])), nil, diskrecord.Options{})
	}
}

// track records a live instance; it refuses once the Host is closed.
func (h *Host) track(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.live[c] = struct{}{}
	return true
}

func (h *Host) untrack(c *conn) {
	h.mu.Lock()
	delete(h.live, c)
	h.mu.Unlock()
}
