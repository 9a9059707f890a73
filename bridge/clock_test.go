package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A call's deadline and the wedge rule read the one clock: moved an hour
// on, a call to a plugin that never answers fails past its hour-long
// deadline at once, and the instance, silent an hour past it, is stopped
// as wedged, without the test waiting for either.
func TestDeadlineAndWedgeReadTheClock(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	arrived := make(chan struct{}, 1)
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		arrived <- struct{}{}
		return true // never answers
	}}
	e := mustStart(t, s, func(o *Options) {
		o.Clock = clock
		o.Deadlines.Tool = time.Hour
		o.Deadlines.Grace = time.Hour
	})
	done := make(chan error, 1)
	go func() {
		_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c", nil)
		done <- err
	}()
	<-arrived
	clock.Advance(time.Hour)
	select {
	case err := <-done:
		var de *DeadlineError
		if !errors.As(err, &de) || de.After != time.Hour {
			t.Fatalf("%v, want the hour-long deadline passed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end when the clock passed its deadline")
	}
	clock.Advance(time.Hour)
	if n := e.notices.Next(t); !strings.Contains(n.Message, "stopping the wedged instance") {
		t.Fatalf("notice %q, want the wedged instance stopped", n.Message)
	}
}
