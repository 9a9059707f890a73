package wasm

import (
	"context"
	"io"
	"os"

	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
	"github.com/tetratelabs/wazero/api"
)

// stdinEnd is the host's end of a guest's stdin: what the bridge writes
// goes to the guest.
type stdinEnd interface {
	io.Writer
	// guestEnd is what the guest reads: the reader given to wazero.
	guestEnd() io.Reader
	// closeWrite ends the input: the guest reads what is left, then EOF.
	closeWrite()
	// release frees the guest's end once the instance is gone.
	release()
	// waiting reports whether input is written and not yet read.
	waiting() bool
}

// osStdin is an unmetered guest's stdin (HostConfig.TerminationChecks):
// an OS pipe, which wazero lets a guest make non-blocking and poll by
// itself, as guests ran before the meter.
type osStdin struct{ r, w *os.File }

func newOSStdin() (*osStdin, error) {
	r, w, err := os.Pipe()
	return &osStdin{r, w}, err
}

func (s *osStdin) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *osStdin) guestEnd() io.Reader         { return s.r }
func (s *osStdin) closeWrite()                 { _ = s.w.Close() }
func (s *osStdin) release()                    { _ = s.r.Close() }

// waiting is false: what a pipe holds is not known, and an unmetered
// guest's stdout always waits for the host's read, as it did before.
func (s *osStdin) waiting() bool { return false }

// The stdin shim: the meter points a metered guest's imports of
// fd_fdstat_get and fd_fdstat_set_flags at small functions of its own
// (wasmmeter.Hook) that call wazero's and then a hook here, so that
// for fd 0 the non-blocking mode lives in the memPipe. The hooks take the
// call's fd and argument and wazero's result, and return the result the
// guest sees.

// The WASI values the hooks use.
const (
	wasiFdflagNonblock     = 1 << 2
	wasiErrnoNosys         = 52
	wasiFiletypeOfMemStdin = 1 // FILETYPE_BLOCK_DEVICE: what wazero reports for a reader stdin
)

type stdinKey struct{}

// withStdin gives an instance's context its stdin, for the hooks.
func withStdin(ctx context.Context, s *memPipe) context.Context {
	return context.WithValue(ctx, stdinKey{}, s)
}

func stdinOf(ctx context.Context) *memPipe {
	s, _ := ctx.Value(stdinKey{}).(*memPipe)
	return s
}

// afterFdstatGet adds the non-blocking flag to wazero's fdstat of fd 0,
// which wazero never sets for a reader stdin. The file type is checked,
// so that a file a guest opened after closing its stdin, given fd 0, is
// reported as wazero sees it.
func afterFdstatGet(ctx context.Context, mod api.Module, stack []uint64) {
	fd, buf, errno := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	stack[0] = uint64(errno)
	s := stdinOf(ctx)
	if fd != 0 || errno != 0 || s == nil || !s.isNonblock() {
		return
	}
	mem := mod.Memory()
	if ft, ok := mem.ReadByte(buf); !ok || ft != wasiFiletypeOfMemStdin {
		return
	}
	if flags, ok := mem.ReadUint16Le(buf + 2); ok {
		mem.WriteUint16Le(buf+2, flags|wasiFdflagNonblock)
	}
}

// afterFdstatSetFlags keeps fd 0's non-blocking mode in the memPipe.
// wazero refuses the mode for a reader stdin (ENOSYS), and accepts its
// clearing; it has already refused the flags it never takes (EINVAL) and
// a closed fd 0 (EBADF), whose errors stand. A file that wazero lets go
// non-blocking at fd 0 is not the memPipe, and is left as wazero has it.
func afterFdstatSetFlags(ctx context.Context, _ api.Module, stack []uint64) {
	fd, flags, errno := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	s := stdinOf(ctx)
	nonblock := flags&wasiFdflagNonblock != 0
	switch {
	case fd != 0 || s == nil:
	case errno == wasiErrnoNosys && nonblock:
		s.setNonblock(true)
		errno = 0
	case errno == 0 && !nonblock:
		s.setNonblock(false)
	}
	stack[0] = uint64(errno)
}

// stdinHooks are the shimmed WASI functions, as the meter hooks them,
// and the hooks.
var stdinHooks = []struct {
	wasmmeter.Hook
	fn api.GoModuleFunc
}{
	{wasmmeter.Hook{Module: "wasi_snapshot_preview1", Name: "fd_fdstat_get", After: "after_fd_fdstat_get"}, afterFdstatGet},
	{wasmmeter.Hook{Module: "wasi_snapshot_preview1", Name: "fd_fdstat_set_flags", After: "after_fd_fdstat_set_flags"}, afterFdstatSetFlags},
}

// stdinShim is what the meter is given of stdinHooks.
var stdinShim = func() []wasmmeter.Hook {
	hooks := make([]wasmmeter.Hook, len(stdinHooks))
	for i, h := range stdinHooks {
		hooks[i] = h.Hook
	}
	return hooks
}()
