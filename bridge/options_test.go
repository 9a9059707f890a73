package bridge

import (
	"testing"
	"time"
)

// The backoff's own rules, without a plugin: the first death respawns at
// once, each further one in a row waits twice as long up to Max, an
// instance that lived Reset starts the count again, and a healthy
// instance forgets it.
func TestBackoffValue(t *testing.T) {
	b := backoff{policy: Backoff{Initial: time.Second, Max: 4 * time.Second, Reset: time.Minute}}
	now := time.Unix(1000, 0)
	var waits []time.Duration
	for range 5 {
		b.died(now, 0)
		waits = append(waits, b.wait(now))
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if w := b.wait(now.Add(3 * time.Second)); w != time.Second {
		t.Errorf("3s into a 4s wait: %s left, want 1s", w)
	}
	if b.died(now, time.Minute); b.wait(now) != 0 {
		t.Errorf("a death after a minute's life waits %s, want none", b.wait(now))
	}
	b.died(now, 0)
	b.healthy()
	if b.died(now, 0); b.wait(now) != 0 {
		t.Errorf("the first death after a healthy spell waits %s, want none", b.wait(now))
	}
}
