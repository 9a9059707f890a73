package host

import (
	"context"
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// Compact shortens the conversation now (the /compact command).
func (h *Host) Compact(ctx context.Context) (before, after int) {
	h.convMu.Lock()
	defer h.convMu.Unlock()
	before = len(h.conv)
	h.compactLocked(ctx, "command")
	return before, len(h.conv)
}

// Conversation returns a copy of the conversation so far.
func (h *Host) Conversation() []sdk.Message {
	h.convMu.Lock()
	defer h.convMu.Unlock()
	return append([]sdk.Message(nil), h.conv...)
}

// SetConversation replaces the conversation (a resumed session).
func (h *Host) SetConversation(conv []sdk.Message) {
	h.convMu.Lock()
	defer h.convMu.Unlock()
	h.conv = append([]sdk.Message(nil), conv...)
}

// compactLocked asks the first registered compactor; if it fails (an
// error, its deadline, a dead plugin) or answers something unusable, the
// built-in compaction runs instead. h.convMu is held.
func (h *Host) compactLocked(ctx context.Context, reason string) {
	if len(h.conv) == 0 {
		return
	}
	if cs := h.reg.Compactors(); len(cs) > 0 {
		c := cs[0]
		got, err := c.Value.Compact(ctx, sdk.CompactRequest{Context: h.conv, Reason: reason})
		switch {
		case err != nil:
			h.cfg.Notify(bridge.Notice{Plugin: c.Owner, Level: "warn", Message: fmt.Sprintf("compactor %s failed (%v); using the built-in compaction", c.Value.ID(), err)})
		case !keepsLatestPrompt(h.conv, got.Messages):
			h.cfg.Notify(bridge.Notice{Plugin: c.Owner, Level: "warn", Message: fmt.Sprintf("compactor %s dropped the latest prompt; using the built-in compaction", c.Value.ID())})
		default:
			h.conv = got.Messages
			return
		}
	}
	h.conv = BuiltinCompact(h.conv, h.settings.Turn.CompactAt/2)
}

// keepsLatestPrompt reports whether a compaction still holds the latest
// person's prompt, without which the model would answer nothing asked.
func keepsLatestPrompt(before, after []sdk.Message) bool {
	for i := len(before) - 1; i >= 0; i-- {
		if before[i].Role == sdk.RoleUser {
			for _, m := range after {
				if m.Role == sdk.RoleUser && m.Content == before[i].Content {
					return true
				}
			}
			return false
		}
	}
	return len(after) > 0
}

// BuiltinCompact keeps the newest messages that fit in budget bytes (as
// size counts them), replacing the older ones with one note saying how many
// were dropped. It never splits a model's tool calls from their results
// and always keeps the latest prompt, so the only messages lost are old
// ones it meant to drop.
func BuiltinCompact(conv []sdk.Message, budget int) []sdk.Message {
	latestPrompt := -1
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == sdk.RoleUser {
			latestPrompt = i
			break
		}
	}
	// Walk back from the end; a cut may only fall before a user message or
	// an assistant message (never before a tool result).
	cut, used := len(conv), 0
	for i := len(conv) - 1; i >= 0; i-- {
		used += size(conv[i : i+1])
		if used > budget && i > latestPrompt && latestPrompt >= 0 {
			break
		}
		if used > budget && (latestPrompt < 0 || i <= latestPrompt) && cut <= latestPrompt {
			break
		}
		if conv[i].Role != sdk.RoleTool {
			cut = i
		}
	}
	if latestPrompt >= 0 && cut > latestPrompt {
		cut = latestPrompt
	}
	if cut == 0 {
		return conv
	}
	note := sdk.Message{Role: sdk.RoleUser, Content: fmt.Sprintf("[%d earlier messages were compacted away]", cut)}
	return append([]sdk.Message{note}, conv[cut:]...)
}

// compactCommand is the host's own /compact, registered like any plugin's
// command: an in-process sdk.Command.
type compactCommand struct{ h *Host }

func (c compactCommand) Spec() sdk.CommandSpec {
	return sdk.CommandSpec{Name: "compact", Hint: "compact the conversation", Args: sdk.CommandArgs{Kind: sdk.ArgsNone}, Instant: true, Family: "host"}
}

func (c compactCommand) Run(ctx context.Context, _ sdk.CommandRun) (sdk.CommandOutcome, error) {
	before, after := c.h.Compact(ctx)
	if before == 0 {
		return sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: "nothing to compact"}, nil
	}
	return sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: fmt.Sprintf("compacted %d messages to %d", before, after)}, nil
}

func (compactCommand) Complete(context.Context, sdk.CompleteRequest) ([]sdk.Completion, error) {
	return nil, nil
}
