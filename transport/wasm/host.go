package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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
}

// ErrHostClosed is returned by Start once the Host is closed.
var ErrHostClosed = errors.New("wasm host closed")

// Host owns one wazero runtime, the WASI imports instantiated in it, the
// modules compiled in it and every instance started from it. Transports
// made by one Host share all of those. A Host is safe for concurrent use.
type Host struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache
	// life ends when Close begins: it cancels the compilations in flight
	// and wakes every Start waiting for one.
	life    context.Context
	endLife context.CancelFunc

	mu        sync.Mutex
	closed    bool
	modules   map[string]*module // by path; replaced when the file changes
	live      map[*conn]struct{} // instances not yet ended
	compiling sync.WaitGroup     // compilations using the runtime; Add only under mu while open

	compiles atomic.Int32 // compilations started, for tests and diagnostics
}

// module is one compilation of one file, shared by every Start that finds
// the file unchanged. done is closed when cm/err are set.
type module struct {
	mtime time.Time
	size  int64
	done  chan struct{}
	cm    wazero.CompiledModule
	err   error
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
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasm host: instantiate WASI: %w", err)
	}
	life, endLife := context.WithCancel(context.Background())
	return &Host{
		rt:      rt,
		cache:   cache,
		life:    life,
		endLife: endLife,
		modules: map[string]*module{},
		live:    map[*conn]struct{}{},
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

// compiled returns the module compiled from path, compiling it on the
// first call for this version of the file (path, mtime, size). Concurrent
// callers for the same version share one compilation: wazero's cache does
// not stop parallel compiles of one module. ctx bounds only this caller's
// wait, never the shared compilation: a compilation outlives a caller who
// gives up, so that the next Start finds it done, but not the Host.
func (h *Host) compiled(ctx context.Context, path string) (wazero.CompiledModule, error) {
	fi, err := statModule(path)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHostClosed
	}
	m := h.modules[path]
	if m == nil || !m.mtime.Equal(fi.ModTime()) || m.size != fi.Size() {
		m = &module{mtime: fi.ModTime(), size: fi.Size(), done: make(chan struct{})}
		h.modules[path] = m
		go h.compile(path, m)
	}
	h.mu.Unlock()

	select {
	case <-m.done:
		return m.cm, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.life.Done():
		return nil, ErrHostClosed
	}
}

// compile runs on its own goroutine so that a caller giving up (ctx) does
// not abandon a compilation that other callers wait for.
func (h *Host) compile(path string, m *module) {
	defer close(m.done)
	h.compiles.Add(1)
	f, err := openModule(path)
	if err != nil {
		m.err = err
		return
	}
	defer f.Close()
	m.cm, m.err = h.compileFrom(path, f)
}

// compileFrom reads a module from r and compiles it in the runtime. The
// read may take as long as the file system does, so Close does not wait
// for it; the compilation uses the runtime, so Close cancels it and waits.
func (h *Host) compileFrom(path string, r io.Reader) (wazero.CompiledModule, error) {
	bin, err := readModule(path, r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHostClosed
	}
	h.compiling.Add(1)
	h.mu.Unlock()
	defer h.compiling.Done()
	// Compile functions in parallel: a cold compile of a Go guest is the
	// longest wait a person sees from a wasm plugin. The workers check the
	// context between functions, which is what makes Close prompt.
	ctx := experimental.WithCompilationWorkers(h.life, runtime.GOMAXPROCS(0))
	cm, err := h.rt.CompileModule(ctx, bin)
	if err != nil && h.life.Err() != nil {
		return nil, ErrHostClosed
	}
	return cm, err
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
