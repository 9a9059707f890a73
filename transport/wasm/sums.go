package wasm

import (
	"encoding/hex"
	"io/fs"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// sumsCacheVersion names the directory, under HostConfig.CacheDir, where
// the sha256 of each module file a Host has read is kept, by the file's
// path and version (fileversion.SumDir), so that a new process starting
// an unchanged module neither reads nor hashes it: it goes from the
// file's stat straight to the metered module kept under that sum. A
// change to what a record says must change the name.
//
// A sum picks the code that runs: a record that does not match costs only
// the read and hash it would have saved. Like the metered modules beside
// it, the directory is trusted as the person's own: someone who can write
// to it can choose the code a plugin runs, as they could by writing
// wazero's compiled code.
const sumsCacheVersion = "sums-v2"

// keptSum returns the sha256 of the module file at path, of the version fi
// describes, if a Host kept it.
func (h *Host) keptSum(path string, fi fs.FileInfo) ([32]byte, bool) {
	var key [32]byte
	s, ok := h.sums.Get(path, fi)
	if !ok {
		return key, false
	}
	_, err := hex.Decode(key[:], []byte(s.SHA256))
	return key, err == nil
}

// keepSum keeps key as the sha256 of the module file at path, of the
// version fi describes (from the opened file), read from readAt on, if
// that version is strong and had settled by readAt. readAt is taken before
// fi: then a write after fi was taken, which the bytes read may include,
// comes at least SettleTime after the version's last change, so it gives
// the file another version and the record is never believed of it.
func (h *Host) keepSum(path string, fi fs.FileInfo, key [32]byte, readAt time.Time) {
	h.sums.Keep(fileversion.SumOf(path, fi, hex.EncodeToString(key[:]), readAt), fi)
}
