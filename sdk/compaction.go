package sdk

import "context"

// CompactRequest asks a compactor to shorten a conversation.
type CompactRequest struct {
	Context []Message `json:"context"`
	// Reason is why: "budget" when the conversation passed its budget,
	// "command" when the person asked (/compact).
	Reason string `json:"reason" jsonschema:"enum=budget,enum=command"`
}

// Compaction is a shortened conversation: Messages replace the context
// whole.
type Compaction struct {
	Messages []Message `json:"messages"`
	Summary  string    `json:"summary,omitempty"`
}

// Compactor is a compaction strategy.
type Compactor interface {
	ID() string
	// Compact fails with an error (for a remote one past its deadline,
	// one wrapping context.DeadlineExceeded); the host then falls back to
	// its built-in compaction.
	Compact(ctx context.Context, req CompactRequest) (Compaction, error)
}
