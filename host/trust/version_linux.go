package trust

import (
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// version names the version of the file fi describes (see FileSum), and
// says when it last changed.
func version(fi fs.FileInfo) (string, time.Time) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano()), fi.ModTime()
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	changed := fi.ModTime()
	if ctime.After(changed) {
		changed = ctime
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano(), ctime.UnixNano()), changed
}
