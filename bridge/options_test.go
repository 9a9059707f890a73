package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/proxy"
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

// An instance ends in one place, once (instance.end): the first reason
// holds, and everything that knows of the end follows from it. A request
// in flight fails with errEnded and that reason, a new one is refused, the
// wire writes nothing more, no handler of the plugin's starts, the
// instance's context ends, and the plugin, whose instance it was, is dead
// with the one notice of a death.
func TestInstanceEndsOnce(t *testing.T) {
	e := mustStart(t, script{decl: basicDecl(), handle: func(*peer, msg) bool { return true }}, nil) // answers nothing
	e.plugin.mu.Lock()
	inst := e.plugin.sup.inst
	e.plugin.mu.Unlock()
	req := proxy.Request{Method: "x/never"}
	pc, err := inst.send(e.plugin.newID(), req, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.inFlight.done(pc)
	why := errors.New("the test ended it")
	if first, _ := inst.end(why); !first {
		t.Fatal("the first end did not end it")
	}
	if first, _ := inst.end(errStopped); first || inst.reason != why {
		t.Fatalf("a second end changed it: reason %v", inst.reason)
	}
	if err := pc.wait(context.Background(), nil, nil); !errors.Is(err, errEnded) || !strings.Contains(err.Error(), why.Error()) {
		t.Fatalf("the request in flight: %v, want errEnded with the reason", err)
	}
	if inst.inFlight.unanswered() {
		t.Error("the table still holds requests")
	}
	if _, err := inst.send(e.plugin.newID(), req, time.Hour, time.Now()); !errors.Is(err, errEnded) {
		t.Errorf("a request after the end: %v, want errEnded", err)
	}
	if err := inst.wire.notify("x/note", nil); !errors.Is(err, errEnded) {
		t.Errorf("a notification after the end: %v, want errEnded", err)
	}
	var handlers sync.WaitGroup
	if inst.inFlight.startHandler(&handlers) {
		t.Error("a handler started after the end")
	}
	if inst.ctx.Err() == nil {
		t.Error("the instance's context outlived it")
	}
	if n := e.notices.Next(t); !strings.Contains(n.Message, "stopped") {
		t.Errorf("notice %q, want the death's", n.Message)
	}
	<-inst.dead
	if got := e.plugin.Status(); got != "dead" {
		t.Errorf("status %s, want dead", got)
	}
}
