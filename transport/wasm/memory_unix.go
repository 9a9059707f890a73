//go:build unix

package wasm

import (
	"golang.org/x/sys/unix"
)

// region is address space reserved for one linear memory: mapped with no
// access at its full limit, so that it never moves, and made readable and
// writable page by page as the memory grows. The kernel backs a page with
// memory only when the guest first touches it, so a guest costs the host
// about what it touches, not what it grew to, nor twice that while a
// grown copy waits for the collector.
type region struct {
	mem    []byte // the whole reservation; or, unmapped, the memory itself
	mapped bool
	usable uint64 // bytes of a mapped mem made readable and writable, whole pages
}

var pageSize = uint64(unix.Getpagesize())

// reserve reserves limit bytes of address space. Mapped PROT_NONE, it
// commits nothing: what the guest grows into is committed as it is opened
// (mprotect), so no swap is set aside for what it may never touch. (Not
// MAP_NORESERVE, which some systems, FreeBSD among them, lack.) Where the reservation
// fails (a ulimit on address space, say), the memory is an ordinary
// slice, grown as append would grow it.
func reserve(limit uint64) region {
	if limit == 0 {
		return region{}
	}
	mem, err := unix.Mmap(-1, 0, int(limit), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return region{}
	}
	return region{mem: mem, mapped: true}
}

// bytes returns the memory's first size bytes.
func (r *region) bytes(size uint64) []byte { return r.mem[:size:size] }

// grow makes the first size bytes usable, at most limit, and returns them.
func (r *region) grow(size, limit uint64) ([]byte, error) {
	if !r.mapped {
		if size > uint64(cap(r.mem)) {
			buf := make([]byte, size, min(max(size, 2*uint64(cap(r.mem))), limit))
			copy(buf, r.mem)
			r.mem = buf
		}
		r.mem = r.mem[:size]
		return r.mem[:size:size], nil
	}
	if need := min((size+pageSize-1)&^(pageSize-1), uint64(len(r.mem))); need > r.usable {
		if err := unix.Mprotect(r.mem[r.usable:need], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil, err
		}
		r.usable = need
	}
	return r.mem[:size:size], nil
}

// free gives the region's pages back to the system.
func (r *region) free() {
	if r.mapped {
		_ = unix.Munmap(r.mem)
	}
	*r = region{}
}
