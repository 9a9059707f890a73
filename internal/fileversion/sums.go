package fileversion

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
)

// Sum is the sha256 of one version of a file.
type Sum struct {
	Path    string
	Version string // the version's ID
	SHA256  string // in hex
	// Settled is true when the version had settled when it was read
	// (Version.Settled): only such a sum is worth keeping beyond the
	// process.
	Settled bool
}

// SumOf is the sum, sha256 in hex, of the file at path, of the version fi
// describes, read from readAt on (taken before the file was opened).
func SumOf(path string, fi fs.FileInfo, sha256 string, readAt time.Time) Sum {
	v := Of(fi)
	return Sum{Path: path, Version: v.ID, SHA256: sha256, Settled: v.Settled(readAt)}
}

// Matches reports whether s is a sum of the version fi describes.
func (s Sum) Matches(fi fs.FileInfo) bool { return s.Version == Of(fi).ID }

// SumDir keeps sums on disk, in the directory it names ("" keeps none), so
// that another process need not read a file again. Only a sum of a
// settled, strong version is kept, and a kept one is believed only for a
// file whose version it names exactly: then no change of the file,
// whatever its owner sets its modification time to, a rename or a copy
// over it included, leaves its version as recorded.
//
// A record is one file, named by the hex sha256 of the file's absolute
// path, sealed (package diskrecord): the hex sha256, the version's ID and
// the absolute path Go-quoted, separated by single spaces. A record that
// does not match in every byte (damaged, truncated, another path's,
// edited without its checksum) is not believed, and costs only the read
// it would have saved. The directory is trusted as its owner's: whoever
// can write to it chooses what a kept sum says.
type SumDir string

// maxSumRecord caps a record read back: a sum, a version and a quoted
// path (at most PATH_MAX bytes, four times that quoted) fit many times.
const maxSumRecord = 64 << 10

// record returns the record file for the file at path, and how the
// record must read after its sum for the version v: " <ID> <quoted path>".
func (d SumDir) record(path string, v Version) (file, rest string, ok bool) {
	abs, err := filepath.Abs(path)
	if err != nil || d == "" || !v.Strong {
		return "", "", false
	}
	name := sha256.Sum256([]byte(abs))
	return filepath.Join(string(d), hex.EncodeToString(name[:])), " " + v.ID + " " + strconv.Quote(abs), true
}

// Get returns the sum kept of the file at path, of the version fi
// describes.
func (d SumDir) Get(path string, fi fs.FileInfo) (Sum, bool) {
	v := Of(fi)
	file, rest, ok := d.record(path, v)
	if !ok {
		return Sum{}, false
	}
	rec, err := diskrecord.ReadSealed(file, maxSumRecord)
	sum, tail, found := strings.Cut(string(rec), " ")
	if err != nil || !found || " "+tail != rest || len(sum) != 2*sha256.Size {
		return Sum{}, false
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return Sum{}, false
	}
	return Sum{Path: path, Version: v.ID, SHA256: sum, Settled: true}, true
}

// Keep keeps s, if it is settled and fi, which s is of, describes a
// strong version. A record that cannot be written costs only another
// process's read.
func (d SumDir) Keep(s Sum, fi fs.FileInfo) {
	file, rest, ok := d.record(s.Path, Of(fi))
	if ok && s.Settled && s.Matches(fi) {
		_ = diskrecord.Replace(file, diskrecord.Seal([]byte(s.SHA256+rest)), diskrecord.Options{})
	}
}
