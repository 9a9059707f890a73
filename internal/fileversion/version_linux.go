package fileversion

import (
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

func of(fi fs.FileInfo) Version {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return weak(fi)
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	changed := fi.ModTime()
	if ctime.After(changed) {
		changed = ctime
	}
	return Version{
		ID:      fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano(), ctime.UnixNano()),
		Changed: changed,
		Strong:  true,
	}
}
