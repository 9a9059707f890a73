package mcpfault

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Sideband lets the server send requests of its own on its stdio, beside
// the sdk's session, as a server does that speaks an older protocol or
// none at all: the sdk (from protocol 2026-07-28) sends a client request
// only as part of a call's result. The answers are taken off stdin before
// the sdk reads it (Reader).
type Sideband struct {
	out io.Writer
	in  *bufio.Reader

	mu      sync.Mutex
	n       int
	waiting map[string]chan json.RawMessage
	pending []byte // what of the last line read the sdk has yet to read
}

// idPrefix marks the ids of the sideband's requests.
const idPrefix = "mcpfault-sideband-"

// NewSideband returns the sideband on the server's stdin and stdout; the
// sdk's session reads stdin through it.
func NewSideband(stdin io.Reader, stdout io.Writer) *Sideband {
	return &Sideband{out: stdout, in: bufio.NewReader(stdin), waiting: map[string]chan json.RawMessage{}}
}

// Read is stdin less the answers to the sideband's requests.
func (b *Sideband) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		line, err := b.in.ReadBytes('\n')
		if len(line) > 0 && !b.answered(line) {
			b.pending = line
		}
		if err != nil && len(b.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// answered hands line to the request it answers, if it answers one.
func (b *Sideband) answered(line []byte) bool {
	var m struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return false
	}
	s, ok := m.ID.(string)
	if !ok || !strings.HasPrefix(s, idPrefix) {
		return false
	}
	b.mu.Lock()
	c := b.waiting[s]
	delete(b.waiting, s)
	b.mu.Unlock()
	if c != nil {
		if m.Error != nil {
			c <- m.Error
		} else {
			c <- m.Result
		}
	}
	return true
}

// Request sends a request and returns its answer: the result, or the
// error object.
func (b *Sideband) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.n++
	id := fmt.Sprintf("%s%d", idPrefix, b.n)
	c := make(chan json.RawMessage, 1)
	b.waiting[id] = c
	b.mu.Unlock()
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := b.out.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	select {
	case a := <-c:
		return a, nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.waiting, id)
		b.mu.Unlock()
		return nil, ctx.Err()
	}
}
