package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// What a plugin is started with, beside build: the directory its
// declaration is keyed by, the wasm runtime and sandbox, its data
// directory, and the cache of what it declared.

// keyDir is the directory plugins' cached declarations are keyed by: the
// project's root, or the home directory outside a project.
func (h *Host) keyDir() string {
	if h.trust.root != "" {
		return h.trust.root
	}
	return h.cfg.Home
}

// sandboxCwd is the working directory as wasm plugins see it: "" (none)
// if it is or lies inside ~/.bingo, or the host's /proc, /sys or /dev,
// said once a run.
func (h *Host) sandboxCwd() string {
	err := Private(h.cfg.Home, h.cfg.Cwd)
	if err == nil {
		return h.cfg.Cwd
	}
	h.privateCwd.Do(func() {
		h.notice("warn", "wasm plugins do not see the working directory: %v; run bingo from another directory", err)
	})
	return ""
}

// untrustedCompileWall bounds the wall time of compiling an untrusted
// project's wasm module, whatever the machine is doing, so that no
// repository holds bingo for more than about half a minute, and a module
// that runs out of it is remembered, not tried on every run; the person's
// and a trusted project's modules get five times their CPU bound, as a
// busy machine takes that long over a module that is fine.
const untrustedCompileWall = 25 * time.Second

// dataDirFirst makes a plugin's data directory (0700) just before each
// start of it, not when the host is opened: a run that starts none of its
// plugins (their declarations cached) makes nothing, and a directory
// removed while bingo runs is made again by the next start. One that
// cannot be made fails that start, with why.
type dataDirFirst struct {
	transport.Transport
	dir string
}

func (t dataDirFirst) Start(ctx context.Context) (transport.Conn, error) {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create its data directory: %w", err)
	}
	return t.Transport.Start(ctx)
}

// wasmHost returns the run's wasm runtime, made by the first wasm plugin
// built.
func (h *Host) wasmHost(ctx context.Context) (*wasm.Host, error) {
	h.wasmMu.Lock()
	defer h.wasmMu.Unlock()
	if h.wasm == nil {
		wh, err := wasm.NewHost(context.WithoutCancel(ctx), wasm.HostConfig{
			CacheDir: filepath.Join(h.cfg.Home, ".bingo", "data", "cache", "wasm")})
		if err != nil {
			return nil, err
		}
		h.wasm = wh
	}
	return h.wasm, nil
}

// cache keeps what l declared at a handshake, for the next run to offer
// without starting it. A cache that cannot be written costs a line in the
// plugin's log and nothing else.
func (h *Host) cache(l *loaded, decl protocol.InitializeResult) {
	if err := h.decls.Store(l.key, decl, l.plugin.Refused()); err != nil {
		fmt.Fprintf(l.log, "bingo: %v\n", err)
	}
}

// wasmNotKeyed are the fields of wasm.Config left out of a wasm plugin's
// declaration key (declcache.Fields takes every other one, so a field
// added to wasm.Config joins the key by itself). Dir is the working
// directory, which a declaration is not keyed by (a plugin is told it
// with each call, never at its handshake); the timeouts and the compile
// bounds decide whether the module starts, not what it declares.
var wasmNotKeyed = []string{"Dir", "InstantiateTimeout", "SlowCompileAfter", "Bounds"}
