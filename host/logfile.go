package host

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// DefaultLogCap is the size at which a plugin's log is rotated: the log
// keeps the current file and one previous (.1), so a chatty plugin costs
// at most twice this on disk.
const DefaultLogCap = 8 << 20

// LogFile is a plugin's log: its stderr and what the bridge says about its
// wire, appended to ~/.bingo/data/logs/plugin-<name>.log. Writes are
// serialised, so the stderr copier and the bridge can share it.
type LogFile struct {
	path string
	cap  int64

	mu   sync.Mutex
	f    *os.File
	size int64
	err  error // the first write error, reported once by Close
}

// OpenLog opens (creating) the log at path for appending.
func OpenLog(path string, capBytes int64) (*LogFile, error) {
	if capBytes <= 0 {
		capBytes = DefaultLogCap
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	l := &LogFile{path: path, cap: capBytes}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *LogFile) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past its cap.
// A log that cannot be written never fails the plugin: the error is kept
// for Close and the bytes are dropped.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(p), nil
	}
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		l.f.Close()
		l.f = nil
		if err := os.Rename(l.path, l.path+".1"); err != nil && l.err == nil {
			l.err = err
		}
		if err := l.open(); err != nil {
			if l.err == nil {
				l.err = err
			}
			return len(p), nil
		}
	}
	if len(p) > int(l.cap) {
		p = p[len(p)-int(l.cap):] // keep the end: it is what explains a death
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err != nil && l.err == nil {
		l.err = err
	}
	return len(p), nil
}

// Path is the log's file name.
func (l *LogFile) Path() string { return l.path }

// Close closes the file and reports the first write error, if any.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.f = nil
	}
	if l.err != nil {
		return fmt.Errorf("log %s: %w", l.path, l.err)
	}
	return nil
}
