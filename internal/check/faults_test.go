package check

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

// The cancel step's watcher: when it cancelled is read after it is
// written, and its goroutine has ended by then, whether the call answered
// before the watcher saw it sent, after, or was never sent. Run with
// -race.
func TestCancelOnSend(t *testing.T) {
	defer goleak.VerifyNone(t)
	for range 200 {
		// Sent, and answered at once: the watcher may not have run yet.
		sent := make(chan struct{})
		_, cancelled := cancelOnSend(context.Background(), sent)
		close(sent)
		_ = cancelled()
	}
	sent := make(chan struct{})
	cctx, cancelled := cancelOnSend(context.Background(), sent)
	close(sent)
	<-cctx.Done()
	if cancelled().IsZero() {
		t.Error("cancelled on send, but no time is given")
	}
	if _, cancelled := cancelOnSend(context.Background(), make(chan struct{})); !cancelled().IsZero() {
		t.Error("never sent, but a time of cancelling is given")
	}
}
