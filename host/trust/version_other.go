//go:build !linux

package trust

import (
	"fmt"
	"io/fs"
	"time"
)

// version names the version of the file fi describes (see FileSum), and
// says when it last changed.
func version(fi fs.FileInfo) (string, time.Time) {
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano()), fi.ModTime()
}
