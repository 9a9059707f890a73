//go:build !unix

package wasm

// region is one linear memory where address space cannot be reserved
// with the calls memory_unix.go uses: a slice of its full limit's
// capacity, so that growing never copies. Go backs so large an allocation
// with fresh pages from the system, which cost memory only once touched.
type region struct{ mem []byte }

func reserve(limit uint64) region { return region{mem: make([]byte, 0, limit)} }

func (r *region) bytes(size uint64) []byte { return r.mem[:size:size] }

func (r *region) grow(size, _ uint64) ([]byte, error) { return r.mem[:size:size], nil }

func (r *region) free() { r.mem = nil }
