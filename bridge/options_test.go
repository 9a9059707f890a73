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

// The supervisor holds the instance exactly while running and the start
// exactly while starting: running cannot be reached without an instance,
// and leaving it drops the instance.
func TestSupervisorKeepsStateAndInstanceTogether(t *testing.T) {
	s := supervisor{name: "t", state: notStarted}
	st := &startup{from: notStarted}
	s.begin(st)
	if s.state != starting || s.start != st {
		t.Fatalf("begun: %s, start %v", s.state, s.start)
	}
	inst := &instance{}
	s.run(inst)
	if s.state != running || s.inst != inst || s.start != nil {
		t.Fatalf("running: %s, inst %v, start %v", s.state, s.inst, s.start)
	}
	s.move(dead)
	if s.inst != nil {
		t.Fatal("dead, and still holding its instance")
	}
	for _, bad := range []lifecycle{running, starting} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("move(%s) without what goes with it did not panic", bad)
				}
			}()
			s.move(bad)
		}()
	}
}

// An instance's phase moves one way: only one through its handshake goes
// live, its end is final, and the end remembers whether it had been live.
func TestInstancePhase(t *testing.T) {
	a := &instance{}
	if !a.to(live) || a.to(live) {
		t.Fatal("handshaking goes live once")
	}
	if !a.to(ended) || a.phase != endedLive || a.to(ended) || a.to(live) {
		t.Fatalf("a live instance ends as endedLive, once, for good: %d", a.phase)
	}
	b := &instance{}
	if !b.to(ended) || b.phase != ended || b.to(live) {
		t.Fatalf("one that ended before going live stays ended: %d", b.phase)
	}
}
