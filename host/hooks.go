package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// severity orders outcomes: the strictest wins.
var severity = map[sdk.HookOutcome]int{sdk.HookContinue: 0, sdk.HookRedirect: 1, sdk.HookAsk: 2, sdk.HookDeny: 3, sdk.HookBlock: 4}

// Decide asks every hook that declared at, at once, and returns the
// strictest decision and the id of the hook that made it. A hook that
// fails or misses its deadline decides nothing (a notice says so).
func (h *Host) Decide(ctx context.Context, at sdk.HookPoint, payload any) (best sdk.HookDecision, hook string) {
	hooks := h.reg.Hooks(at, true)
	best.Outcome = sdk.HookContinue
	if len(hooks) == 0 {
		return best, ""
	}
	raw, _ := json.Marshal(payload)
	ev := sdk.HookEvent{Site: at.Site, Point: at.Point, Payload: raw}
	results := make([]sdk.HookDecision, len(hooks))
	var wg sync.WaitGroup
	for i, e := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.Hook.Decide(ctx, ev)
			if err != nil {
				if registry.OwnNotice(err) {
					h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s decided nothing: %v", e.Hook.ID(), err)})
				}
				d = sdk.HookDecision{Outcome: sdk.HookContinue}
			}
			// What a redirect goes on with is a tool's input or a model
			// request: an object at every point.
			if d.Outcome == sdk.HookRedirect && !(json.Valid(d.Value) && protocol.KindOf(d.Value) == "an object") {
				h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s redirected without a valid value (want a JSON object); ignored", e.Hook.ID())})
				d = sdk.HookDecision{Outcome: sdk.HookContinue}
			}
			if d.Outcome == sdk.HookRedirect && h.trust.untrustedOwner(e.Owner) {
				d = h.unredirected(at, e, d)
			}
			results[i] = d
		}()
	}
	wg.Wait()
	for i, d := range results {
		if severity[d.Outcome] > severity[best.Outcome] {
			best, hook = d, hooks[i].Hook.ID()
		}
	}
	if best.Reason == "" {
		best.Reason = "no reason given"
	}
	return best, hook
}

// unredirected is what an untrusted project plugin's redirect becomes: a
// redirect would run the person's tool, with the person's allow rules, on
// input the repository chose, or send the person's model a request it
// wrote. At tool/before it is a question to the person that shows the
// input proposed (a refusal where no one can answer); at prompt/before it
// changes nothing. Either way one notice per hook and point says so.
func (h *Host) unredirected(at sdk.HookPoint, e registry.HookEntry, d sdk.HookDecision) sdk.HookDecision {
	if _, told := h.unredirect.LoadOrStore(e.Owner+"\x00"+e.Hook.ID()+"\x00"+at.String(), true); !told {
		what := "asked about instead"
		if at != sdk.ToolBefore {
			what = "ignored"
		}
		h.cfg.Notify(bridge.Notice{Plugin: e.Owner, Level: "warn", Message: fmt.Sprintf("hook %s redirected at %s; a plugin of a project you have not trusted may not change what runs, so its redirect is %s", e.Hook.ID(), at, what)})
	}
	if at != sdk.ToolBefore {
		return sdk.HookDecision{Outcome: sdk.HookContinue}
	}
	proposed := string(d.Value)
	if r := []rune(proposed); len(r) > maxShown {
		proposed = string(r[:maxShown]) + "…"
	}
	return sdk.HookDecision{Outcome: sdk.HookAsk, Reason: fmt.Sprintf("it would run the call with the input %s instead (not applied: its project is not trusted)", proposed)}
}

// maxShown bounds what a refused redirect's question shows of the input
// it proposed.
const maxShown = 200

// observedBy is what an observer owned by owner is told of payload, and
// whether it is told at all; full is payload as every other observer is
// told it. A plugin of a project the person has not trusted hears only its
// own tools' outputs and the end of a turn without the model's words: it
// needs no more to watch what it contributes, and what the person's tools
// answered is the person's business, not a repository's.
func (h *Host) observedBy(owner string, payload any, full json.RawMessage) (json.RawMessage, bool) {
	if !h.trust.untrustedOwner(owner) {
		return full, true
	}
	switch p := payload.(type) {
	case sdk.ToolAfterPayload:
		return full, h.reg.ToolOwner(p.Call.Name) == owner
	case sdk.TurnEndPayload:
		p.Text = ""
		raw, _ := json.Marshal(p)
		return raw, true
	}
	return full, true
}

// Observe tells every hook that declared at what happened.
// Nothing waits on it: the observation is sent on its own goroutine, owned
// by the host (Close waits for them after stopping the plugins), so a hook
// whose process is not reading cannot hold up the turn. Each goroutine
// waits for the one before it, so hooks hear events in the order they
// happened.
func (h *Host) Observe(at sdk.HookPoint, payload any) {
	hooks := h.reg.Hooks(at, false)
	if len(hooks) == 0 {
		return
	}
	full, _ := json.Marshal(payload)
	events := make([]*sdk.HookEvent, len(hooks))
	for i, e := range hooks {
		if raw, ok := h.observedBy(e.Owner, payload, full); ok {
			events[i] = &sdk.HookEvent{Site: at.Site, Point: at.Point, Payload: raw}
		}
	}
	h.obsMu.Lock()
	prev, done := h.obsTail, make(chan struct{})
	h.obsTail = done
	h.obsMu.Unlock()
	h.observers.Add(1)
	go func() {
		defer h.observers.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		for i, e := range hooks {
			if events[i] != nil {
				e.Hook.Observe(context.Background(), *events[i])
			}
		}
	}()
}
