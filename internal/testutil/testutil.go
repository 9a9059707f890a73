// Package testutil holds what the tests of several packages need: two
// concurrency-safe sinks (a log buffer a test can wait on, and a collector
// of notices, or anything else, a test can wait for one of), a tool call's
// UI that records what reached the person, the wire's names read from
// protocol.go's source, and the smallest Python plugin a start-up
// benchmark installs many of. Nothing in it
// sleeps to synchronise: a writer wakes the waiters.
package testutil

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitLimit bounds every wait: past it the test fails rather than hangs.
// It is generous because -race on a loaded machine is slow; a passing run
// never waits for it.
const WaitLimit = 20 * time.Second

// SyncBuffer is a log sink safe for concurrent writers.
type SyncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor waits until the buffer holds sub and returns its content.
func (s *SyncBuffer) WaitFor(t testing.TB, sub string) string {
	t.Helper()
	limit := time.NewTimer(WaitLimit)
	defer limit.Stop()
	for {
		s.mu.Lock()
		got := s.b.String()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if strings.Contains(got, sub) {
			return got
		}
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("no %q within %s in:\n%s", sub, WaitLimit, got)
		}
	}
}

// Collector gathers values (notices) from concurrent senders, in order.
type Collector[T any] struct {
	mu   sync.Mutex
	list []T
	ch   chan T
}

// NewCollector returns an empty collector.
func NewCollector[T any]() *Collector[T] { return &Collector[T]{ch: make(chan T, 256)} }

// Add records x; it never blocks.
func (c *Collector[T]) Add(x T) {
	c.mu.Lock()
	c.list = append(c.list, x)
	c.mu.Unlock()
	select {
	case c.ch <- x:
	default: // a flood is a failure the test reports from All anyway
	}
}

// All returns everything added so far.
func (c *Collector[T]) All() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.list...)
}

// Next waits for the next value not yet taken by Next.
func (c *Collector[T]) Next(t testing.TB) T {
	t.Helper()
	select {
	case x := <-c.ch:
		return x
	case <-time.After(WaitLimit):
		t.Fatalf("nothing within %s", WaitLimit)
		var zero T
		return zero
	}
}

// RecordingUI is a tool call's UI (an sdk.CallUI) that records progress
// lines and questions, and answers the questions with Answers in turn,
// then every later one with Answer.
type RecordingUI struct {
	Answers []string
	Answer  string
	// Err, if set, is what every question gets instead of an answer (no
	// one to ask, say).
	Err error

	mu       sync.Mutex
	progress []string
	asked    []string
}

func (u *RecordingUI) Progress(tail string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.progress = append(u.progress, tail)
}

func (u *RecordingUI) Ask(_ context.Context, q string) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, q)
	if u.Err == nil && len(u.Answers) > 0 {
		a := u.Answers[0]
		u.Answers = u.Answers[1:]
		return a, nil
	}
	return u.Answer, u.Err
}

// Seen returns the progress lines and the questions so far.
func (u *RecordingUI) Seen() (progress, asked []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.progress...), append([]string(nil), u.asked...)
}

// Lines writes each of xs on its own line.
func Lines[T fmt.Stringer](xs []T) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(x.String() + "\n")
	}
	return b.String()
}
