package wasm

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryCap is an instance's memory allocator. wazero's own cap
// (RuntimeConfig.WithMemoryLimitPages) belongs to the runtime, and one
// runtime serves every plugin of a Host with its own limit; so the cap is
// enforced here instead, by refusing to grow past it, or past what the
// instance's MemoryBudget has left. A refused grow makes memory.grow
// return -1, which a Go guest reports as "fatal error: out of memory"
// before exiting with code 2.
//
// Each linear memory is a region reserved at its full limit and made
// usable as the guest grows into it (reserve, in memory_unix.go): growing
// never moves or copies it, and it costs the host only the pages the
// guest touches. Its pages are given back by release, once no guest code
// can run in it any more; wazero's Free, which a closing runtime calls
// while the guest may still be running, does nothing.
type memoryCap struct {
	limit  uint64
	budget *MemoryBudget // nil: the instance's limit alone bounds it
	// refused says what a refused grow met: nothing yet, the limit, or
	// the budget.
	refused atomic.Int32

	mu   sync.Mutex
	mems []*cappedMemory
}

// What a grow was refused for (memoryCap.refused).
const (
	refusedNone int32 = iota
	refusedLimit
	refusedBudget
)

func (m *memoryCap) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	c := &cappedMemory{owner: m, limit: min(m.limit, maximum)}
	// The first grow, to the module's minimum, is never refused (see
	// Reallocate), so there must be room for it.
	c.region = reserve(max(c.limit, capacity))
	m.mu.Lock()
	m.mems = append(m.mems, c)
	m.mu.Unlock()
	return c
}

// release gives back every memory of the instance: its pages to the
// system and what it took to the budget. It is called once, when no
// guest code of the instance can run any more (conn.release).
func (m *memoryCap) release() {
	m.mu.Lock()
	mems := m.mems
	m.mems = nil
	m.mu.Unlock()
	for _, c := range mems {
		c.region.free()
		if m.budget != nil {
			m.budget.give(c.size)
		}
	}
}

// startRefused is why the instance cannot run, when the memory it starts
// with was past its limit or its budget (which Reallocate grants anyway):
// "" if it was not.
func (m *memoryCap) startRefused(name string) string {
	switch m.refused.Load() {
	case refusedLimit:
		return fmt.Sprintf("wasm plugin %s: %v of %d MiB is below the memory the module starts with: raise the plugin's memory limit", name, ErrMemoryLimit, m.limit>>20)
	case refusedBudget:
		return m.budgetError(name, " before it could start")
	}
	return ""
}

// budgetError is why an instance was refused memory by its budget.
func (m *memoryCap) budgetError(name, when string) string {
	return fmt.Sprintf("wasm plugin %s: out of memory: %s is taken%s; %s", name, m.budget, when, m.budget.raise)
}

// cappedMemory is one linear memory: the first size bytes of region.
type cappedMemory struct {
	owner   *memoryCap
	limit   uint64
	region  region
	size    uint64
	started bool // the first Reallocate is past
}

// Reallocate grows the memory to size bytes in place: the guest keeps its
// address, and nothing is copied. The first call, the module's minimum
// memory during its instantiation, is granted even past the limit or the
// budget, and marked refused for Start to refuse the instance: wazero
// takes a nil there for a broken allocator and panics.
func (c *cappedMemory) Reallocate(size uint64) []byte {
	first := !c.started
	c.started = true
	if size <= c.size {
		return c.region.bytes(size)
	}
	if size > c.limit && !first {
		c.owner.refused.CompareAndSwap(refusedNone, refusedLimit)
		return nil
	}
	buf, err := c.region.grow(size, max(c.limit, size))
	if err != nil {
		c.owner.refused.CompareAndSwap(refusedNone, refusedLimit)
		return nil
	}
	if size > c.limit {
		c.owner.refused.CompareAndSwap(refusedNone, refusedLimit)
	}
	if b := c.owner.budget; b != nil && !b.take(size-c.size) {
		c.owner.refused.CompareAndSwap(refusedNone, refusedBudget)
		if !first {
			// The pages made usable stay so, untouched.
			return nil
		}
		b.used.Add(size - c.size) // granted all the same: Start refuses the instance
	}
	c.size = size
	return buf
}

// Free is wazero's: it runs when the module closes, which a closing
// runtime may do while the guest still runs, so the pages stay until
// memoryCap.release.
func (c *cappedMemory) Free() {}

// MemoryBudget is memory that the instances of several Transports share:
// each grow of one takes from it, and an instance's end gives back all it
// took. A grow past what is left is refused as one past the instance's
// own limit is. The bingo host gives the wasm plugins of a project the
// person has not trusted one budget, so that a repository's many plugins
// cost what one budget does. It is safe for concurrent use.
type MemoryBudget struct {
	limit uint64
	used  atomic.Uint64
	// who is what shares it and raise how to raise it, for the error of
	// an instance refused by it: "this untrusted project's wasm
	// plugins", "untrustedWasm.memoryMiB in your ~/.bingo/settings.json
	// raises it".
	who, raise string
}

// NewMemoryBudget returns a budget of mib MiB shared by who; raise says,
// for the error of an instance that dies at it, how to raise it.
func NewMemoryBudget(mib int, who, raise string) *MemoryBudget {
	return &MemoryBudget{limit: uint64(max(mib, 0)) << 20, who: who, raise: raise}
}

// take takes n bytes, if that many are left.
func (b *MemoryBudget) take(n uint64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit || used+n < used {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *MemoryBudget) give(n uint64) { b.used.Add(-n) }

// Used returns how many bytes the live instances hold.
func (b *MemoryBudget) Used() uint64 { return b.used.Load() }

// String names the budget and its size, for an error.
func (b *MemoryBudget) String() string {
	return fmt.Sprintf("the %d MiB %s share", b.limit>>20, b.who)
}
