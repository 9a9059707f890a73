package wasm

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/wasmmeter"
)

// CompileChildArg, as a program's first argument, makes it the compile
// child: the process in which a Host compiles a module it has not
// compiled before (see the package doc, "Bounds"). A program that runs
// Hosts with a disk cache (the bingo binary, and the test binaries of
// packages that do) starts with
//
//	if len(os.Args) > 1 && os.Args[1] == wasm.CompileChildArg {
//		os.Exit(wasm.CompileChild(os.Args[2:], os.Stdin, os.Stderr))
//	}
//
// It looks like a flag so that a program that does not know it (a test
// binary whose TestMain was not told) refuses it at once, rather than run
// as itself. The child's first line on stderr says it is one: a start in
// a program without the hook fails with an error saying to add it.
const CompileChildArg = "-bingo-wasm-compile-child"

// CompileChild is the compile child's main: it reads a metered module
// from stdin, compiles it into the disk cache named by args[0] (wazero
// keeps the compiled code there, where the Host that started it then
// loads it) and returns the exit code: 0 once it is kept, 1 if wazero
// refuses the module (its reason on stderr), 2 for a misuse.
func CompileChild(args []string, stdin io.Reader, stderr io.Writer) int {
	// The first line says this is the compile child: a program that is
	// not (one that embeds the package but not this hook) fails in its
	// own words, which the Host replaces with what to add (notChild).
	fmt.Fprintln(stderr, childHello)
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: "+CompileChildArg+" CACHE-DIR MEMORY-MIB < module.wasm")
		return 2
	}
	if mib, err := strconv.Atoi(args[1]); err == nil && mib > 0 {
		// Collect harder as the bound nears: a module that fits when
		// garbage is collected is not refused for the garbage.
		debug.SetMemoryLimit(int64(mib) << 20 * 3 / 4)
	}
	bin, err := io.ReadAll(io.LimitReader(stdin, int64(wasmmeter.MaxSize(MaxModuleSize))+1))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx := experimental.WithCompilationWorkers(context.Background(), runtime.GOMAXPROCS(0))
	cache, err := wazero.NewCompilationCacheWithDir(args[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	// The runtime's configuration is the Host's (NewHost): wazero keys its
	// disk cache by it, and the Host must find what the child keeps.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(false))
	if _, err := rt.CompileModule(ctx, bin); err != nil {
		fmt.Fprintln(stderr, firstLine(err.Error()))
		return 1
	}
	return 0
}

// compileInChild compiles bin, a metered module whose original's sha256
// is key, in a compile child under b's time and memory bounds, so that
// wazero keeps its code in the disk cache; the Host's own CompileModule
// then loads it. CompileModule cannot be interrupted, and no size checked
// up front bounds its cost: only a process can be stopped whatever it is
// doing. One child runs at a time in a Host (childSlot): a child uses
// every core, so children side by side would finish no sooner, and their
// memory would add up.
//
// On Linux the child's CPU time and resident memory are read every
// rssPoll, and it is killed when either passes its bound: a module that
// did is remembered (rememberRefusal). CPU time, not wall time, because
// on a busy machine a module that is fine takes many times its CPU time
// to compile; the wall time is bounded too, at wallFactor times the CPU
// bound, and a module that ran out of that is not remembered, as it says
// more of the machine than of the module. A caller that sets CompileWall
// is held to it, busy machine or not, and a module that ran out of it is
// remembered: the caller chose not to wait for it. Elsewhere only the
// wall time is bounded, at CompileTime unless CompileWall says
// otherwise, and only a CompileWall refusal is remembered.
func (h *Host) compileInChild(ctx context.Context, key [32]byte, bin []byte, b Bounds) error {
	b = b.withDefaults() // a zero bound would kill the child at its first poll
	select {
	case h.childSlot <- struct{}{}:
		defer func() { <-h.childSlot }()
	case <-ctx.Done():
		return ErrHostClosed
	}
	cmd := exec.Command(h.compiler, CompileChildArg, h.cacheDir, strconv.Itoa(b.CompileMemoryMiB))
	cmd.Stdin = bytes.NewReader(bin)
	var stderr bytes.Buffer // its first lines: a refusal, or a crash
	cmd.Stderr = &headWriter{buf: &stderr, n: 4 << 10}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start the compiler process %s: %w", h.compiler, err)
	}
	h.children.Add(1)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	_, _, watched := procStat(cmd.Process.Pid)
	wall := wallOf(b)
	if !watched && b.CompileWall <= 0 {
		wall = b.CompileTime
	}
	deadline := time.NewTimer(wall)
	defer deadline.Stop()
	tick := time.NewTicker(rssPoll)
	defer tick.Stop()
	cancelled := ctx.Done()
	memory := int64(b.CompileMemoryMiB) << 20
	var over *BoundError // why the child was killed
	var remember bool    // and whether that is the module's doing
	kill := func(e *BoundError, module bool) {
		if over == nil {
			over, remember = e, module
			_ = cmd.Process.Kill()
		}
	}
	for {
		select {
		case err := <-done:
			switch {
			case h.life.Err() != nil:
				return ErrHostClosed
			case over != nil:
				if remember {
					h.rememberRefusal(key, b, over, wall)
				}
				return over
			}
			said, ok := strings.CutPrefix(stderr.String(), childHello+"\n")
			if !ok {
				return h.notChild()
			}
			if err == nil {
				return nil
			}
			if line := firstLine(said); line != "" {
				return errors.New(line)
			}
			return fmt.Errorf("the compiler process failed: %w", err)
		case <-tick.C:
			cpu, rss, ok := procStat(cmd.Process.Pid)
			switch {
			case !ok:
			case rss > memory:
				kill(&BoundError{Bound: BoundMemory, Limit: memory}, true)
			case cpu > b.CompileTime:
				kill(&BoundError{Bound: BoundTime, Limit: int64(b.CompileTime)}, true)
			}
		case <-deadline.C:
			e := &BoundError{Bound: BoundTime, Limit: int64(b.CompileTime)}
			if watched || b.CompileWall > 0 {
				e.Size = int64(wall)
			}
			kill(e, b.CompileWall > 0)
		case <-cancelled:
			cancelled = nil
			_ = cmd.Process.Kill()
		}
	}
}

// childHello is the compile child's first line on stderr.
const childHello = "bingo-wasm-compile-child"

// notChild is the error for a compiler process that did not say it is the
// compile child: the program embeds this package without CompileChildArg's
// hook, and what it did with the argument (refuse it as a flag, or run as
// itself) compiled nothing and says nothing of what to do.
func (h *Host) notChild() error {
	return fmt.Errorf("%s did not run as the compile child: a program that runs a wasm Host with a CacheDir must handle wasm.CompileChildArg first thing in main (as the doc of CompileChildArg shows), or name a program that does in HostConfig.Compiler", h.compiler)
}

// wallOf is the wall time b gives the compile child where its CPU time
// is watched: CompileWall, or wallFactor times CompileTime.
func wallOf(b Bounds) time.Duration {
	if b.CompileWall > 0 {
		return b.CompileWall
	}
	return wallFactor * b.CompileTime
}

// rssPoll is how often the compile child's CPU time and memory are read:
// a compiler allocating fast gains a few tens of MiB between two reads.
const rssPoll = 20 * time.Millisecond

// wallFactor is how many times its CPU time bound the compile child may
// take in wall time, where that bound is CPU time.
const wallFactor = 5

// refusalVersion names the directory, under HostConfig.CacheDir, of the
// modules remembered as over a compile bound. A module is remembered by
// its sha256 and the meter's version, as what was compiled was its
// metered form.
const refusalVersion = "refused-v1"

func (h *Host) refusedPath(key [32]byte) string {
	return filepath.Join(h.cacheDir, refusalVersion, hex.EncodeToString(key[:]))
}

// rememberRefusal keeps, by the module's sha256, the bounds under which
// its compilation failed (the CPU time, memory and wall time it had) and
// the refusal e: a few dozen bytes. A failure to keep it costs the next
// run the same wait.
func (h *Host) rememberRefusal(key [32]byte, b Bounds, e *BoundError, wall time.Duration) {
	rec := fmt.Sprintf("%s %s %d %d %d %d\n", meterCacheVersion, e.Bound, int64(b.CompileTime), b.CompileMemoryMiB, int64(wall), e.Size)
	_ = diskrecord.Replace(h.refusedPath(key), []byte(rec), diskrecord.Options{})
}

// refused returns the refusal remembered for the module whose sha256 is
// key, if b are no wider than the bounds it failed under; nil if none is
// remembered, or if b give it more time (CPU or wall) or memory than it
// had.
func (h *Host) refused(key [32]byte, b Bounds) *BoundError {
	if h.cacheDir == "" {
		return nil
	}
	rec, err := capped.Read(h.refusedPath(key), 256)
	if err != nil {
		return nil
	}
	var version, bound string
	var t, wall, size int64
	var mib int
	if _, err := fmt.Sscanf(string(rec), "%s %s %d %d %d %d\n", &version, &bound, &t, &mib, &wall, &size); err != nil || version != meterCacheVersion {
		return nil
	}
	if t <= 0 || mib <= 0 || wall <= 0 {
		// No bound of zero is applied: a record of one (an earlier
		// build kept them) says nothing of the module.
		return nil
	}
	if int64(b.CompileTime) > t || b.CompileMemoryMiB > mib || int64(wallOf(b)) > wall {
		return nil
	}
	e := &BoundError{Bound: bound, Remembered: true, Size: size}
	switch bound {
	case BoundTime:
		e.Limit = t
	case BoundMemory:
		e.Limit = int64(mib) << 20
	default:
		return nil
	}
	return e
}

// defaultCompiler is the compile child's program: this executable.
func defaultCompiler() string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe
}

// headWriter keeps the first n bytes written to it and drops the rest,
// so a child that writes without end costs no memory.
type headWriter struct {
	buf *bytes.Buffer
	n   int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.n - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// firstLine is s's first non-empty line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
