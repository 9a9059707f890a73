package wasm

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// sumsCacheVersion names the directory, under HostConfig.CacheDir, where
// the sha256 of each module file a Host has read is kept, by the file's
// path and version, so that a new process starting an unchanged module
// neither reads nor hashes it: it goes from the file's stat straight to
// the metered module kept under that sum. A change to what a record says
// must change the name.
const sumsCacheVersion = "sums-v2"

// maxSumRecord caps a record read back: a sum, a version and a quoted
// path (at most PATH_MAX bytes, four times that quoted) fit many times.
const maxSumRecord = 64 << 10

// A record is one file, named by the hex sha256 of the module's absolute
// path, sealed (package diskrecord): the module's hex sha256, its version
// (fileversion.Version.ID) and its absolute path Go-quoted, separated by
// single spaces.
//
// A sum picks the code that runs, so a record is believed only for a file
// whose version it names exactly, and only a sum of a settled, strong
// version is kept (see package fileversion): then no change of the file,
// whatever its owner sets its modification time to, a rename or a copy
// over it included, leaves its version as recorded. A record that does not
// match in every byte (damaged, truncated, another path's, edited without
// its checksum) is not believed, and costs only the read and hash it would
// have saved. Like the metered modules beside it, the directory is trusted
// as the person's own: someone who can write to it can choose the code a
// plugin runs, as they could by writing wazero's compiled code.

// sumRecord returns the record file for the module at path, and the
// record's line without its sum and checksum, as it must read for the
// version v: " <version> <quoted path>".
func (h *Host) sumRecord(path string, v fileversion.Version) (file, rest string, ok bool) {
	abs, err := filepath.Abs(path)
	if err != nil || h.sumsDir == "" || !v.Strong {
		return "", "", false
	}
	name := sha256.Sum256([]byte(abs))
	return filepath.Join(h.sumsDir, hex.EncodeToString(name[:])), " " + v.ID + " " + strconv.Quote(abs), true
}

// keptSum returns the sha256 of the module file at path, of the version fi
// describes, if a Host kept it (see above).
func (h *Host) keptSum(path string, fi fs.FileInfo) ([32]byte, bool) {
	var key [32]byte
	file, rest, ok := h.sumRecord(path, fileversion.Of(fi))
	if !ok {
		return key, false
	}
	rec, err := diskrecord.ReadSealed(file, maxSumRecord)
	if err != nil || len(rec) < 2*len(key) || string(rec[2*len(key):]) != rest {
		return key, false
	}
	if _, err := hex.Decode(key[:], rec[:2*len(key)]); err != nil {
		return key, false
	}
	return key, true
}

// keepSum keeps key as the sha256 of the module file at path, of the
// version fi describes (from the opened file), read from readAt on, if
// that version is strong and had settled by readAt. readAt is taken before
// fi: then a write after fi was taken, which the bytes read may include,
// comes at least SettleTime after the version's last change, so it gives
// the file another version and the record is never believed of it. A
// record that cannot be written costs only the next process's read and
// hash.
func (h *Host) keepSum(path string, fi fs.FileInfo, key [32]byte, readAt time.Time) {
	v := fileversion.Of(fi)
	file, rest, ok := h.sumRecord(path, v)
	if !ok || !v.Settled(readAt) {
		return
	}
	_ = diskrecord.Replace(file, diskrecord.Seal([]byte(hex.EncodeToString(key[:])+rest)), diskrecord.Options{})
}
