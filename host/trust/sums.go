package trust

import (
	"io/fs"
	"sync"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Sums remembers the sha256 of the regular files Snapshot has hashed, by
// version: a file is hashed again only once its version (see FileSum)
// changes. One Sums shared by everything that digests a plugin in one
// process (trust, the host's declaration cache) hashes each file once. It
// is safe for concurrent use.
type Sums struct {
	mu     sync.Mutex
	hashed map[string]FileSum // by path: what this process hashed
	// assumed are sums read from elsewhere (a cache file), consulted
	// after hashed and never added to it: a view made by Assuming.
	assumed map[string]FileSum
	parent  *Sums
}

// FileSum is the sha256 of one version of a file. Its Version names the
// version (fileversion.Version.ID): on Linux the device, inode, size, and
// the modification and status-change times in nanoseconds, which change
// whenever the contents can have (the status-change time cannot be set
// back by the file's owner); elsewhere the size and modification time.
// Settled is true when the file had not changed for a while before it was
// hashed: a sum taken just after a change may have read a version whose
// timestamps the next write, within the clock's granularity, does not
// change. Only a settled sum is worth keeping beyond the process.
type FileSum = fileversion.Sum

// NewSums returns an empty Sums.
func NewSums() *Sums { return &Sums{hashed: map[string]FileSum{}} }

// Assuming returns a view of s that also believes known, sums kept from an
// earlier process (each still only for the version it names). What the
// view hashes, s remembers; what it assumes, s never sees, so a digest
// made through s alone (trust's) rests only on what this process read.
func (s *Sums) Assuming(known []FileSum) *Sums {
	v := &Sums{parent: s, assumed: make(map[string]FileSum, len(known))}
	for _, f := range known {
		v.assumed[f.Path] = f
	}
	return v
}

// Snapshot is the package's Snapshot, hashing each file version once
// through s.
func (s *Sums) Snapshot(sc Scope, m *manifest.Manifest) (Plugin, error) {
	return snapshot(sc, m, s)
}

// Get returns the sum s holds for path, hashed or assumed, as of the
// version it last saw.
func (s *Sums) Get(path string) (FileSum, bool) {
	if s.parent != nil {
		if f, ok := s.parent.Get(path); ok {
			return f, true
		}
		f, ok := s.assumed[path]
		return f, ok
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.hashed[path]
	return f, ok
}

// lookup returns the hex sum of path at the version fi describes, if
// known. A nil Sums knows nothing.
func (s *Sums) lookup(path string, fi fs.FileInfo) (string, bool) {
	if s == nil {
		return "", false
	}
	if f, ok := s.Get(path); ok && f.Matches(fi) {
		return f.SHA256, true
	}
	return "", false
}

// remember records the hex sum of path at the version fi describes, hashed
// at hashedAt.
func (s *Sums) remember(path string, fi fs.FileInfo, sum string, hashedAt time.Time) {
	if s == nil {
		return
	}
	if s.parent != nil {
		s.parent.remember(path, fi, sum, hashedAt)
		return
	}
	f := fileversion.SumOf(path, fi, sum, hashedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hashed[path] = f
}
