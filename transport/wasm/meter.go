package wasm

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Every module is metered (package wasmmeter) before it is compiled:
// this is the host's side, the functions a metered module imports and the
// metered modules kept on disk.

// instantiateMeter defines the functions metered modules import: refuel,
// and the stdin shim's hooks.
func instantiateMeter(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasmmeter.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(refuel), nil, []api.ValueType{api.ValueTypeI32}).
		Export(wasmmeter.Refuel)
	i32 := api.ValueTypeI32
	for _, h := range stdinHooks {
		b = b.NewFunctionBuilder().WithGoModuleFunction(h.fn, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export(h.After)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// refuel ends the guest if its instance is over (its context is done:
// Kill, Host.Close, an instantiation that took too long), and otherwise
// gives it fuel for wasmmeter.FuelPerRefuel more checks.
func refuel(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		_ = mod.CloseWithExitCode(context.Background(), sys.ExitCodeContextCanceled)
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	stack[0] = wasmmeter.FuelPerRefuel
}

// meterCacheVersion names the directory, under HostConfig.CacheDir, of
// the metered modules kept on disk. A change to what meter writes must
// change it, so that no module metered the old way is used again.
const meterCacheVersion = "metered-v3"

// metered returns the metered form of bin, whose sha256 is key: from the
// disk cache when it holds it, else made by meter and, with a disk cache,
// kept there. Metering a Go guest of a few MiB takes tens of
// milliseconds, a large part of a warm start; reading it back, one.
//
// The directory is trusted as wazero's compiled code beside it is: it is
// the person's, and no plugin can write to it. Each file is sealed
// (package diskrecord), so a damaged file (a full disk, a crash) is
// metered afresh rather than compiled.
//
// It reports whether the module came from the disk cache: one made here
// is kept (keepMetered) only once wazero has compiled it, so a module
// wazero refuses leaves nothing behind.
func (h *Host) metered(key [32]byte, bin []byte, caps wasmmeter.Options) (out []byte, kept bool, err error) {
	if h.meterDir != "" {
		if out, ok := h.keptMetered(key); ok {
			return out, true, nil
		}
	}
	out, err = meter(bin, caps)
	return out, false, err
}

// keepMetered keeps out, the metered form of the module whose sha256 is
// key, in the disk cache, if there is one. A failure to keep it costs only
// the next start's time.
func (h *Host) keepMetered(key [32]byte, out []byte) {
	if h.meterDir != "" {
		_ = diskrecord.Replace(h.meteredPath(key), diskrecord.Seal(out), diskrecord.Options{})
	}
}

// meteredPath is where the metered form of the module whose sha256 is key
// is kept.
func (h *Host) meteredPath(key [32]byte) string {
	return filepath.Join(h.meterDir, hex.EncodeToString(key[:])+".wasm")
}

// keptMetered returns the metered form of the module whose sha256 is key,
// if the disk cache holds it whole.
func (h *Host) keptMetered(key [32]byte) ([]byte, bool) {
	kept, err := diskrecord.ReadSealed(h.meteredPath(key), int64(wasmmeter.MaxSize(MaxModuleSize)))
	return kept, err == nil
}

// errMeter is the error of a module the meter cannot rewrite.
var errMeter = errors.New("not a module the sandbox can run")

// meter returns bin metered, holding each function to caps, with the
// stdin shim's imports hooked and a Go guest's signal watcher stopped
// (goSignalWatcher); a function over one of caps, or a module
// whose metered form would be over wasmmeter.MaxSize, is refused with a
// *BoundError.
func meter(bin []byte, caps wasmmeter.Options) ([]byte, error) {
	caps.Hooks = stdinShim
	caps.Replace = goSignalWatcher
	out, err := wasmmeter.Meter(bin, caps)
	var limit *wasmmeter.LimitError
	switch {
	case errors.As(err, &limit):
		return nil, limitBound(limit)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errMeter, err)
	}
	return out, nil
}
