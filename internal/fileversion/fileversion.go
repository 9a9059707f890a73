// Package fileversion names the versions of a file, so that what was read
// from one version (its sha256) can be kept and believed until the file
// changes, without reading it again. host/trust keeps sums this way for
// one process and for the declaration cache, and transport/wasm keeps a
// module file's content key across processes.
//
// A version is what stat says of the file; nothing of its contents is
// read. Two rules make a kept sum safe to believe:
//
//   - The version names everything a change of contents changes. On Linux
//     that includes the status-change time, which a write, a chmod, a
//     rename or setting the modification time back all set to the current
//     time, and which the file's owner cannot set (Version.Strong).
//     Elsewhere it is only the size and the modification time, which an
//     owner can set back.
//   - A sum is kept beyond the process only if the file had gone unchanged
//     for SettleTime when it was read (Version.Settled): a write within the
//     clock's granularity of the one before may leave the timestamps as
//     they were, but never one that far after.
package fileversion

import (
	"fmt"
	"io/fs"
	"time"
)

// Version is one version of a file, as stat describes it.
type Version struct {
	// ID names the version: on Linux the device, inode, size, and the
	// modification and status-change times in nanoseconds; elsewhere the
	// size and modification time. It holds no space.
	ID string
	// Changed is when the file last changed: on Linux the later of its
	// modification and status-change times.
	Changed time.Time
	// Strong is true when ID holds the status-change time, so that no
	// change to the file, whatever its owner sets its modification time
	// to, leaves ID as it was (once settled: see Settled).
	Strong bool
}

// SettleTime is how long a file must have gone unchanged for a sum of it
// to be kept: far more than any file system's timestamp granularity.
const SettleTime = 2 * time.Second

// Settled reports whether what was read of v, starting at readAt (taken
// before the file was opened), may be kept beyond the process: v had not
// changed for SettleTime by then, so any later change gives the file
// another ID.
func (v Version) Settled(readAt time.Time) bool {
	return readAt.Sub(v.Changed) >= SettleTime
}

// Of is the version of the file fi describes.
func Of(fi fs.FileInfo) Version { return of(fi) }

// weak is the version of a file known only by its size and modification
// time: a FileInfo that stat did not make, or a system whose status-change
// time is not read here.
func weak(fi fs.FileInfo) Version {
	return Version{ID: fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano()), Changed: fi.ModTime()}
}
