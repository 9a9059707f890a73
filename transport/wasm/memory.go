package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryCap is the per-instance memory allocator. wazero's own cap
// (RuntimeConfig.WithMemoryLimitPages) belongs to the runtime, and one
// runtime serves every plugin of a Host with its own limit; so the cap is
// enforced here instead, by refusing to grow past it. A refused grow makes
// memory.grow return -1, which a Go guest reports as "fatal error: out of
// memory" before exiting with code 2.
type memoryCap struct {
	limit   uint64
	refused atomic.Bool // a grow was refused: the death was the limit
}

func (m *memoryCap) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	limit := min(m.limit, maximum)
	return &cappedMemory{owner: m, limit: limit, buf: make([]byte, 0, min(capacity, limit))}
}

type cappedMemory struct {
	owner *memoryCap
	limit uint64
	buf   []byte
}

// Reallocate grows the memory to size bytes, moving it when the capacity
// is exhausted (allowed for non-shared memories) and doubling the capacity
// so that a guest growing page by page costs amortised linear copying.
func (c *cappedMemory) Reallocate(size uint64) []byte {
	if size > c.limit {
		c.owner.refused.Store(true)
		return nil
	}
	if size <= uint64(cap(c.buf)) {
		c.buf = c.buf[:size]
		return c.buf
	}
	newCap := min(max(size, 2*uint64(cap(c.buf))), c.limit)
	buf := make([]byte, size, newCap)
	copy(buf, c.buf)
	c.buf = buf
	return buf
}

func (c *cappedMemory) Free() { c.buf = nil }
