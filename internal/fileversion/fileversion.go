package fileversion

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
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

// Executable is the version ID of the running program's file, read once a
// process: what a cache that each build of bingo keeps apart is keyed
// by. It is "unknown" when the file cannot be found.
var Executable = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return "unknown"
	}
	return Of(fi).ID
})
