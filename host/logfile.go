package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// DefaultLogCap is the size at which a plugin's log is rotated: the log
// keeps the current file and one previous (.1), so a chatty plugin costs
// at most twice this on disk.
const DefaultLogCap = 8 << 20

// LogFile is a plugin's log: its stderr and what the bridge says about its
// wire, appended to the file logPath names. Writes are
// serialised, so the stderr copier and the bridge can share it. What is
// written is escaped (render.Escape): an escape sequence or a bidi control
// a plugin or a server sent is kept as \x1b or \u202e, so that reading
// the log in a terminal shows it rather than acts on it.
//
// The file is opened, and its directory made, by the first write: a run
// that only lists a plugin whose declaration is cached never starts it,
// and opening twenty logs nobody writes was a tenth of such a run.
type LogFile struct {
	path   string
	cap    int64
	failed func(error)

	mu     sync.Mutex
	f      *os.File
	size   int64
	opened bool   // the first write has tried to open it, or Close ran: never again
	err    error  // the first error opening or writing, reported once by Close
	untold error  // err, until Write has told failed of it
	carry  []byte // the start of a character the last write cut in two
}

// logPath is where m's log goes: ~/.bingo/data/logs/plugin-<name>.log for
// the person's own plugins and a --plugin-dir's, and
// plugin-<name>.<project>.log for a project's, <project> being the first
// 12 hex digits of the sha256 of the project's real path. A repository
// chooses its plugins' names: its plugin of the person's plugin's name
// must neither write into that plugin's log nor rotate it away.
func (h *Host) logPath(m *manifest.Manifest) string {
	name := "plugin-" + m.Name
	if m.Layer == manifest.LayerProject {
		sum := sha256.Sum256([]byte(realPath(h.trust.root)))
		name += "." + hex.EncodeToString(sum[:6])
	}
	return filepath.Join(h.cfg.Home, ".bingo", "data", "logs", name+".log")
}

// NewLog returns the log at path, appended to from its first write on.
// A log that cannot be opened or written never fails the plugin: failed,
// if not nil, is called once with the first such error (on the writer's
// goroutine), and what could not be written is dropped.
func NewLog(path string, capBytes int64, failed func(error)) *LogFile {
	if capBytes <= 0 {
		capBytes = DefaultLogCap
	}
	return &LogFile{path: path, cap: capBytes, failed: failed}
}

// fail keeps err as the log's first error, for Write to tell failed
// once it has let the lock go.
func (l *LogFile) fail(err error) {
	if l.err != nil {
		return
	}
	l.err, l.untold = err, err
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
//
// failed is called after the lock is let go: it may be slow (a notice to
// the person) or write to this very log, and the plugin's other writes
// must not wait on it.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	n := l.write(p)
	untold := l.untold
	l.untold = nil
	l.mu.Unlock()
	if untold != nil && l.failed != nil {
		l.failed(untold)
	}
	return n, nil
}

// write is Write's work, under the lock.
func (l *LogFile) write(p []byte) int {
	n := len(p)
	p = l.escape(p)
	l.first()
	if l.f == nil {
		return n
	}
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		l.f.Close()
		l.f = nil
		if err := os.Rename(l.path, l.path+".1"); err != nil {
			l.fail(err)
		}
		if err := l.open(); err != nil {
			l.fail(err)
			return n
		}
	}
	if len(p) > int(l.cap) {
		p = p[len(p)-int(l.cap):] // keep the end: it is what explains a death
	}
	w, err := l.f.Write(p)
	l.size += int64(w)
	if err != nil {
		l.fail(err)
	}
	return n
}

// escape is p as the log keeps it (render.Escape), the start of a
// character cut in two by its end held back for the next write: stderr
// arrives in pieces of any length, and a bidi control split between two
// would otherwise reach the file whole.
func (l *LogFile) escape(p []byte) []byte {
	if len(l.carry) > 0 {
		p = append(l.carry, p...)
		l.carry = nil
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(p) {
		l.carry = append([]byte(nil), p[cut:]...)
		p = p[:cut]
	}
	for _, c := range p {
		if c < 0x20 && c != '\t' && c != '\n' || c >= 0x7f {
			return []byte(render.Escape(string(p)))
		}
	}
	return p // plain ASCII text: nothing to escape, nothing copied
}

// first opens the file, and makes its directory, at the first use.
func (l *LogFile) first() {
	if l.opened {
		return
	}
	l.opened = true
	err := os.MkdirAll(filepath.Dir(l.path), 0o755)
	if err == nil {
		err = l.open()
	}
	if err != nil {
		l.fail(err)
	}
}

// File is the file the log appends to, opened if it is not yet; nil if it
// cannot be, or once the log is closed. It is for a writer outside this
// process: an exec plugin's shepherd, which goes on writing the plugin's
// stderr to it once bingo has exited (transport/exec's Leave).
func (l *LogFile) File() *os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.first()
	return l.f
}

// Path is the log's file name.
func (l *LogFile) Path() string { return l.path }

// Close closes the file and reports the first write error, if any.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = true // a write after Close is dropped, not a new file
	if l.f != nil && len(l.carry) > 0 {
		// A character never completed: its bytes, escaped.
		_, _ = l.f.WriteString(render.Escape(string(l.carry)))
		l.carry = nil
	}
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
