package proxy

import (
	"context"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bounds"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Kind says what a request is for; it selects the request's deadline.
type Kind int

const (
	KindInitialize Kind = iota
	KindTool
	KindCommand
	KindComplete
	KindContributor
	KindCompactor
	KindProvider
	KindHook
	KindService
)

var kindNames = [...]string{"initialize", "tool", "command", "complete", "contributor", "compactor", "provider", "hook", "service"}

// Deadline returns the deadline of k's requests among d.
func (k Kind) Deadline(d bounds.Deadlines) time.Duration {
	switch k {
	case KindInitialize:
		return d.Initialize
	case KindTool:
		return d.Tool
	case KindCommand:
		return d.Command
	case KindComplete:
		return d.Complete
	case KindContributor:
		return d.Contributor
	case KindCompactor:
		return d.Compactor
	case KindProvider:
		return d.Provider
	case KindHook:
		return d.Hook
	}
	return d.Service
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Request is one wire request as a proxy asks for it.
type Request struct {
	Kind   Kind
	Method string
	Params any

	// CancelMethod, if set, is the notification (with CancelParams) sent
	// when ctx is cancelled before the answer arrives. The wait then goes
	// on until the deadline: a plugin that ignores the cancel is slow,
	// never broken.
	CancelMethod string
	CancelParams any

	// CallID and UI route tool/progress notifications and bingo.host ask
	// requests for this tool call to the person while it runs.
	CallID string
	UI     sdk.CallUI

	// StreamID and Deltas route provider/delta notifications for this
	// stream, in wire order, while it runs.
	StreamID string
	Deltas   func(sdk.StreamEvent)
}

// Caller sends requests to one plugin. Implementations are safe for
// concurrent use. Call returns an error wrapping sdk.ErrUnavailable when
// the plugin cannot answer now (dead, respawning), one wrapping
// context.DeadlineExceeded when the request's deadline passed, and the
// plugin's own JSON-RPC error otherwise.
type Caller interface {
	Call(ctx context.Context, req Request, result any) error
	// Notify sends a notification; nothing waits for an answer.
	Notify(ctx context.Context, method string, params any) error
}
