package wasm

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A linear memory grows where it is: what the guest wrote stays at its
// address, nothing is copied, and a grow past the limit is refused.
func TestMemoryGrowsInPlace(t *testing.T) {
	m := &memoryCap{limit: 64 << 20}
	mem := m.Allocate(0, 1<<32)
	buf := mem.Reallocate(64 << 10)
	if len(buf) != 64<<10 {
		t.Fatalf("len %d, want 64 KiB", len(buf))
	}
	buf[100] = 7
	base := unsafe.SliceData(buf)
	for _, size := range []uint64{128 << 10, 1 << 20, 33 << 20, 64 << 20} {
		buf = mem.Reallocate(size)
		if uint64(len(buf)) != size || unsafe.SliceData(buf) != base || buf[100] != 7 {
			t.Fatalf("grown to %d: len %d, moved %v, kept %v", size, len(buf), unsafe.SliceData(buf) != base, buf[100] == 7)
		}
		buf[size-1] = 1 // the whole of it is usable
	}
	if mem.Reallocate(64<<20+64<<10) != nil || m.refused.Load() != refusedLimit {
		t.Fatalf("a grow past the limit was not refused as one")
	}
	mem.Free()
	if buf[100] != 7 {
		t.Fatal("Free gave the pages back while the guest may still run")
	}
	m.release()
}

// Instances sharing a budget take from it as they grow: one that would
// pass what is left dies of it, with a reason naming the budget and how to
// raise it, and what an instance took comes back when it ends.
func TestMemoryBudgetShared(t *testing.T) {
	budget := NewMemoryBudget(48, "these plugins", "raise it")
	a := startProbe(t, sharedHost, Config{Name: "a", MemoryLimitMiB: 64, Budget: budget})
	if got := a.ask("hold 24"); got != "ok" {
		t.Fatalf("a: hold 24 = %q", got)
	}
	held := budget.Used()
	if held < 24<<20 || held > 48<<20 {
		t.Fatalf("the budget holds %d MiB after a held 24", held>>20)
	}
	tr := sharedHost.Transport(Config{Path: probeWasm, Name: "b", MemoryLimitMiB: 64, Budget: budget})
	c, err := tr.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hold 24\n")); err != nil {
		t.Fatal(err)
	}
	err = waitWithin(t, c, 20*time.Second)
	if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), "wasm plugin b: out of memory: the 48 MiB these plugins share is taken (exit code 2); raise it") {
		t.Fatalf("b: Wait = %v, want it dead of the budget", err)
	}
	if got := budget.Used(); got != held {
		t.Fatalf("b's death left the budget at %d bytes, want a's %d", got, held)
	}
	_ = a.conn.Kill()
	_ = a.conn.Wait()
	if got := budget.Used(); got != 0 {
		t.Fatalf("with every instance gone the budget holds %d bytes", got)
	}
	c2 := startProbe(t, sharedHost, Config{Name: "b", MemoryLimitMiB: 64, Budget: budget})
	if got := c2.ask("hold 24"); got != "ok" {
		t.Fatalf("after a's end, b: hold 24 = %q", got)
	}
}

// The memory a module starts with is never refused where wazero asks for
// it (a nil there panics the host), but an instance whose start is past
// its budget, or its limit, is refused by Start, and gives back what it
// took.
func TestMemoryRefusedAtStart(t *testing.T) {
	budget := NewMemoryBudget(1, "these plugins", "raise it")
	_, err := sharedHost.Transport(Config{Path: probeWasm, Name: "a", Budget: budget}).Start(t.Context())
	if !errors.Is(err, ErrMemoryLimit) || err.Error() != "wasm plugin a: out of memory: the 1 MiB these plugins share is taken before it could start; raise it" {
		t.Fatalf("Start = %v, want it refused for the budget", err)
	}
	if got := budget.Used(); got != 0 {
		t.Fatalf("a refused start left %d bytes taken", got)
	}

	m := &memoryCap{limit: 1 << 20}
	mem := m.Allocate(2<<20, 1<<32)
	if buf := mem.Reallocate(2 << 20); len(buf) != 2<<20 || m.startRefused("b") == "" {
		t.Fatalf("a start past the limit: %d bytes, refused %q", len(buf), m.startRefused("b"))
	}
	m.release()
}
