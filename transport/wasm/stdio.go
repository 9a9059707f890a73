package wasm

import (
	"bytes"
	"io"
	"sync"
)

// lockedWriter serialises writes from the instances of one Transport, which
// all log to the same Config.Stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// fatalLine passes the guest's stderr through and remembers the first line
// that starts with "panic: " or "fatal error: ", so that a death's Wait
// error can say why without anyone reading the log. It keeps at most
// maxFatalLine bytes of the line being assembled.
type fatalLine struct {
	w io.Writer

	mu    sync.Mutex
	cur   []byte
	found string
}

const maxFatalLine = 200

func (f *fatalLine) Write(p []byte) (int, error) {
	f.scan(p)
	return f.w.Write(p)
}

func (f *fatalLine) scan(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.found != "" {
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxFatalLine - len(f.cur); len(chunk) > room {
			chunk = chunk[:room]
		}
		f.cur = append(f.cur, chunk...)
		if i < 0 {
			return
		}
		line := string(f.cur)
		f.cur = f.cur[:0]
		p = p[i+1:]
		if hasPrefix(line, "panic: ") || hasPrefix(line, "fatal error: ") {
			f.found = line
			return
		}
	}
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func (f *fatalLine) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.found
}
