package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
)

// turnNotices says each notice once per turn: a cause that repeats within
// a turn (a contributor dropped from every round, a hook that decides
// nothing at every call) is said the first time, and counted; when the
// turn ends, each that repeated is said once more with its count. Outside
// a turn every notice is said as it comes.
type turnNotices struct {
	say func(bridge.Notice) // the run's sink

	mu     sync.Mutex
	inTurn bool
	counts map[bridge.Notice]int
	order  []bridge.Notice // as first said
}

// notify is the host's notice sink (Config.Notify, wrapped).
func (t *turnNotices) notify(n bridge.Notice) {
	t.mu.Lock()
	if t.inTurn {
		t.counts[n]++
		if t.counts[n] > 1 {
			t.mu.Unlock()
			return
		}
		t.order = append(t.order, n)
	}
	t.mu.Unlock()
	t.say(n)
}

// begin starts a turn's count.
func (t *turnNotices) begin() {
	t.mu.Lock()
	t.inTurn, t.counts, t.order = true, map[bridge.Notice]int{}, nil
	t.mu.Unlock()
}

// end ends the turn's count, saying each notice that repeated with how
// many times it came.
func (t *turnNotices) end() {
	t.mu.Lock()
	var repeated []bridge.Notice
	for _, n := range t.order {
		if c := t.counts[n]; c > 1 {
			repeated = append(repeated, bridge.Notice{Plugin: n.Plugin, Level: n.Level, Message: fmt.Sprintf("%s (%d times in this turn)", n.Message, c)})
		}
	}
	t.inTurn, t.counts, t.order = false, nil, nil
	t.mu.Unlock()
	for _, n := range repeated {
		t.say(n)
	}
}

// Turn runs one turn of the conversation (agent.Agent.Turn), each of its
// notices said once (turnNotices). A Host not made by Open says them as
// they come.
func (h *Host) Turn(ctx context.Context, prompt string, ui agent.TurnUI) (agent.TurnResult, error) {
	if h.turnNotes != nil {
		h.turnNotes.begin()
		defer h.turnNotes.end()
	}
	return h.Agent.Turn(ctx, prompt, ui)
}
