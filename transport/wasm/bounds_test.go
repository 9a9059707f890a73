package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// paddedLoops is a function body of n loops, each holding enough
// straight-line code (i32.const 0, drop, six times) that its check keeps
// the metered module under twice the original: what a module that means
// to be slow to compile, and not merely large when metered, is made of.
// wazero's compile time grows with the square of the loops in a function.
func paddedLoops(n int) []byte {
	var code []byte
	for range n {
		code = append(code, 0x03, 0x40)
		for range 6 {
			code = append(code, 0x41, 0x00, 0x1A)
		}
		code = append(code, end)
	}
	return fnBody(vec(), code...)
}

// slowModule is a command of funcs functions of paddedLoops(loops).
func slowModule(loops, funcs int) []byte {
	types := bytes.Repeat([]byte{0}, funcs)
	bodies := make([][]byte, funcs)
	for i := range bodies {
		bodies[i] = paddedLoops(loops)
	}
	return command(types, bodies)
}

// startErr starts the module bin under b in h and returns Start's error,
// failing the test if it starts or takes longer than within.
func startErr(t *testing.T, h *Host, bin []byte, b Bounds, within time.Duration) error {
	t.Helper()
	path := writeModule(t, "m.wasm", bin)
	t0 := time.Now()
	c, err := h.Transport(Config{Path: path, Name: "m", Bounds: b}).Start(context.Background())
	if err == nil {
		_ = c.Kill()
		_ = c.Wait()
		t.Fatal("the module started")
	}
	if took := time.Since(t0); took > within {
		t.Fatalf("Start took %v to refuse it, want under %v", took, within)
	}
	return err
}

// boundOf is err's *BoundError, failing the test if it has none or it is
// not for the bound want.
func boundOf(t *testing.T, err error, want string) *BoundError {
	t.Helper()
	var be *BoundError
	if !errors.As(err, &be) || be.Bound != want {
		t.Fatalf("error %v, want a refusal for the bound %q", err, want)
	}
	return be
}

// TestBoundsRefuseBeforeCompiling: a module over the cheap bounds (its
// size, a function's size or blocks, or the meter's growth) is refused
// before any compile child is started, in one line that names the
// setting that raises the bound.
func TestBoundsRefuseBeforeCompiling(t *testing.T) {
	var loops []byte
	for range 1000 {
		loops = append(loops, 0x03, 0x40, end) // a loop every three bytes
	}
	cases := []struct {
		name  string
		bin   []byte
		b     Bounds
		bound string
	}{
		{"module", command([]byte{0}, [][]byte{fnBody(vec(), bytes.Repeat([]byte{0x01}, 1<<20)...)}), Bounds{ModuleMiB: 1}, BoundModuleMiB},
		{"function", command([]byte{0, 0}, [][]byte{fnBody(vec()), fnBody(vec(), bytes.Repeat([]byte{0x01}, 2<<10)...)}), Bounds{FunctionKiB: 1}, BoundFunctionKiB},
		{"blocks", command([]byte{0}, [][]byte{fnBody(vec(), bytes.Repeat([]byte{0x02, 0x40, end}, 101)...)}), Bounds{BlocksPerFunction: 100}, BoundBlocks},
		{"loops", command([]byte{0}, [][]byte{paddedLoops(26)}), Bounds{BlocksPerFunction: 100}, BoundBlocks},
		{"growth", command([]byte{0}, [][]byte{fnBody(vec(), loops...)}), Bounds{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := cachedHost(t, t.TempDir())
			c.b.Key = "wasmCompile"
			err := startErr(t, h, c.bin, c.b, 10*time.Second)
			boundOf(t, err, c.bound)
			if n := h.children.Load(); n != 0 {
				t.Fatalf("%d compile children started for a module the cheap bounds refuse", n)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "refused") {
				t.Fatalf("refusal %q: want one line saying refused", msg)
			}
			if c.bound != "" && !strings.Contains(msg, "wasmCompile."+c.bound) {
				t.Fatalf("refusal %q does not name the setting wasmCompile.%s", msg, c.bound)
			}
		})
	}
}

// TestBoundsStopTheCompileChild: a module that passes the cheap bounds
// but takes longer to compile than its time bound, or more memory than
// its memory bound, is refused when the bound is reached; the memory
// refusal is remembered, so that another Host with the same bounds
// refuses it without compiling, and one with wider bounds tries again.
func TestBoundsStopTheCompileChild(t *testing.T) {
	bin := slowModule(1000, 20) // seconds to compile, and tens of MiB
	t.Run("time", func(t *testing.T) {
		dir := t.TempDir()
		b := Bounds{CompileTime: 300 * time.Millisecond}
		if be := boundOf(t, startErr(t, cachedHost(t, dir), bin, b, time.Minute), BoundTime); be.Size != 0 {
			t.Skipf("the machine is too busy to give the child %v of CPU in %v: %v", b.CompileTime, wallFactor*b.CompileTime, be)
		}
		again := cachedHost(t, dir)
		be := boundOf(t, startErr(t, again, bin, b, 10*time.Second), BoundTime)
		if !be.Remembered || again.children.Load() != 0 {
			t.Fatalf("a second Host: remembered %v, %d compile children; want the refusal remembered and none", be.Remembered, again.children.Load())
		}
	})
	// A child that gets no CPU (here one that only sleeps, as one on a
	// machine too busy to run it would) is stopped at five times the
	// bound in wall time, and its module is not held against it.
	t.Run("wall", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the CPU time of the compile child is read on Linux only")
		}
		dir := t.TempDir()
		sleeper := filepath.Join(t.TempDir(), "sleeper")
		if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The wall time is five times the CPU time's bound, and the next
		// Host tries again; or it is what CompileWall says, and a module
		// that runs out of it is remembered, for a Host with no more wall
		// time to give it.
		for i, c := range []struct {
			wall       time.Duration
			remembered bool
		}{{0, false}, {300 * time.Millisecond, false}, {300 * time.Millisecond, true}, {0, false}} {
			b := Bounds{CompileTime: 100 * time.Millisecond, CompileWall: c.wall}
			h, err := NewHost(context.Background(), HostConfig{CacheDir: dir, Compiler: sleeper})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			be := boundOf(t, startErr(t, h, bin, b, 10*time.Second), BoundTime)
			want := c.wall
			if want == 0 {
				want = wallFactor * b.CompileTime
			}
			children := int32(1)
			if c.remembered {
				children = 0
			}
			if be.Remembered != c.remembered || h.children.Load() != children || be.Size != int64(want) {
				t.Fatalf("host %d: %v (remembered %v, %d compile children): want a refusal at %v of wall time, remembered %v", i, be, be.Remembered, h.children.Load(), want, c.remembered)
			}
		}
	})
	t.Run("memory", func(t *testing.T) {
		dir := t.TempDir()
		b := Bounds{CompileMemoryMiB: 8}
		h := cachedHost(t, dir)
		be := boundOf(t, startErr(t, h, bin, b, time.Minute), BoundMemory)
		if be.Remembered {
			t.Fatal("the first refusal says it was remembered")
		}

		again := cachedHost(t, dir)
		be = boundOf(t, startErr(t, again, bin, b, 10*time.Second), BoundMemory)
		if !be.Remembered || again.children.Load() != 0 {
			t.Fatalf("a second Host: remembered %v, %d compile children; want the refusal remembered and none", be.Remembered, again.children.Load())
		}

		wider := cachedHost(t, dir)
		b.CompileMemoryMiB = 9
		be = boundOf(t, startErr(t, wider, bin, b, time.Minute), BoundMemory)
		if be.Remembered || wider.children.Load() != 1 {
			t.Fatalf("wider bounds: remembered %v, %d compile children; want one, tried afresh", be.Remembered, wider.children.Load())
		}
	})
}

// TestCompileChildCompilesOnce: a module a Host has not compiled before
// is compiled in a compile child, and the Host loads what it kept; a
// later Host on the same cache finds the module compiled and starts no
// child. Another build of the host (whose marks are elsewhere: its wazero
// may keep its code elsewhere too) compiles it in a child again, though
// it finds the metered module kept.
func TestCompileChildCompilesOnce(t *testing.T) {
	dir := t.TempDir()
	path := writeModule(t, "m.wasm", command([]byte{0}, [][]byte{fnBody(vec(), 0x41, 7, 0x10, 0)}))
	for i, want := range []int32{1, 0, 1} {
		if i == 2 {
			if err := os.RemoveAll(filepath.Join(dir, compiledVersion)); err != nil {
				t.Fatal(err)
			}
		}
		h := cachedHost(t, dir)
		p := startProbe(t, h, Config{Path: path, Name: "m"})
		if err := waitWithin(t, p.conn, 10*time.Second); err == nil || !strings.Contains(err.Error(), "exit code 7") {
			t.Fatalf("host %d: the module ended with %v, want exit code 7", i, err)
		}
		if n := h.children.Load(); n != want {
			t.Fatalf("host %d: %d compile children, want %d", i, n, want)
		}
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) == 0 {
		t.Fatal("the compile child kept nothing in wazero's cache")
	}
}

// TestCompileChildrenOneAtATime: a Host runs one compile child at a
// time, however many modules it compiles at once, so that their memory
// bounds never add up. The children here are a script that notes when it
// finds another running.
func TestCompileChildrenOneAtATime(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in child is a shell script")
	}
	tmp := t.TempDir()
	child := filepath.Join(tmp, "child")
	script := "#!/bin/sh\nmkdir " + tmp + "/running || touch " + tmp + "/overlap\nsleep 0.3\nrmdir " + tmp + "/running\nexit 1\n"
	if err := os.WriteFile(child, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(context.Background(), HostConfig{CacheDir: t.TempDir(), Compiler: child})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	errs := make(chan error, 3)
	for i := range 3 {
		path := writeModule(t, "m.wasm", command([]byte{0}, [][]byte{fnBody(vec(), 0x41, byte(i), 0x10, 0)}))
		go func() {
			_, err := h.Transport(Config{Path: path, Name: "m"}).Start(context.Background())
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err == nil {
			t.Fatal("a module started though its compile child failed")
		}
	}
	if n := h.children.Load(); n != 3 {
		t.Fatalf("%d compile children, want 3", n)
	}
	if _, err := os.Stat(filepath.Join(tmp, "overlap")); err == nil {
		t.Fatal("two compile children ran at once")
	}
}

// cachedHost is a Host on the cache directory dir, closed at the end of
// the test.
func cachedHost(t *testing.T, dir string) *Host {
	t.Helper()
	h, err := NewHost(context.Background(), HostConfig{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// TestCompileChildRefusesMisuse: the compile child says how to call it,
// and a module wazero refuses is its exit code 1 with wazero's reason.
func TestCompileChildRefusesMisuse(t *testing.T) {
	var stderr bytes.Buffer
	if code := CompileChild(nil, strings.NewReader(""), &stderr); code != 2 || !strings.Contains(stderr.String(), "usage") {
		t.Fatalf("no arguments: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := CompileChild([]string{t.TempDir(), "64"}, strings.NewReader("\x00asm\x01\x00\x00\x00\x0a"), &stderr); code != 1 || stderr.Len() == 0 {
		t.Fatalf("a broken module: exit %d, %q", code, stderr.String())
	}
}
