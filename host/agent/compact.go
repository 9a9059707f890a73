package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/registry"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// compactState is what one run remembers about compacting.
type compactState struct {
	// untrustedSaid is set once the person was told that an untrusted
	// project's compactor is not asked.
	untrustedSaid bool
	// refused holds the compactors (owner/id) that broke the compaction
	// rule: one that put words in the person's mouth once is not trusted
	// with the conversation again this run.
	refused map[string]bool
	// stuck is the turn whose compaction did not make the conversation
	// smaller: nothing before its prompt is left to drop, so compacting
	// again before each of its steps would only repeat itself.
	stuck int
}

// Compact shortens the conversation now (the /compact command) and
// returns the line that says who compacted it and how many messages
// became how many, or "" if there was nothing to compact.
func (a *Agent) Compact(ctx context.Context) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.conv) == 0 {
		return ""
	}
	return a.compactLocked(ctx, "command")
}

// Conversation returns a copy of the conversation so far.
func (a *Agent) Conversation() []sdk.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sdk.Message(nil), a.conv...)
}

// SetConversation replaces the conversation (a resumed session).
func (a *Agent) SetConversation(conv []sdk.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv = append([]sdk.Message(nil), conv...)
}

// compactLocked shortens the conversation and returns the one line that
// tells the person: who compacted, and how many messages became how many.
// a.mu is held.
func (a *Agent) compactLocked(ctx context.Context, reason string) string {
	before := a.conv
	after, who := a.compactWith(ctx, reason)
	a.conv = after
	a.forgetSpans()
	line := fmt.Sprintf("%s compacted the conversation: %d %s to %d", who, len(before), plural(len(before), "message"), len(after))
	if n := shortenedResults(before, after); n > 0 {
		line += fmt.Sprintf(", shortening %d %s of the current turn", n, plural(n, "tool result"))
	}
	if reason == "budget" && size(after) >= size(before) {
		a.compact.stuck = a.turns
		line += "; it is no smaller, so it is not compacted again this turn"
	}
	return line
}

// shortenedResults counts the current turn's tool results that are
// shorter in after than in before.
func shortenedResults(before, after []sdk.Message) int {
	was := map[string]int{}
	for _, m := range before[latestPrompt(before):] {
		if m.Role == sdk.RoleTool {
			was[m.ToolCallID] = len(m.Content)
		}
	}
	n := 0
	for _, m := range after[latestPrompt(after):] {
		if l, ok := was[m.ToolCallID]; ok && m.Role == sdk.RoleTool && len(m.Content) < l {
			n++
		}
	}
	return n
}

// plural is noun for n of it: "1 message", "2 messages".
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// compactWith asks the compactor that may be asked (see compactor). If
// it fails (an error, its deadline, a dead plugin) or breaks the rule
// (vet), the built-in compaction runs instead; who names which ran.
func (a *Agent) compactWith(ctx context.Context, reason string) (conv []sdk.Message, who string) {
	if c, ok := a.compactor(); ok {
		name := fmt.Sprintf("compactor %s of plugin %s", c.Value.ID(), c.Owner)
		got, err := c.Value.Compact(ctx, sdk.CompactRequest{Context: a.conv, Reason: reason})
		if err != nil {
			a.cfg.Notify(bridge.Notice{Plugin: c.Owner, Level: "warn", Message: fmt.Sprintf("compactor %s failed (%v); using the built-in compaction", c.Value.ID(), err)})
		} else if kept, err := vet(a.conv, got.Messages, name); err != nil {
			if a.compact.refused == nil {
				a.compact.refused = map[string]bool{}
			}
			a.compact.refused[c.Owner+"/"+c.Value.ID()] = true
			a.cfg.Notify(bridge.Notice{Plugin: c.Owner, Level: "warn", Message: fmt.Sprintf("compactor %s was refused: %v; the built-in compaction runs instead, and %s is not asked again this run", c.Value.ID(), err, c.Value.ID())})
		} else {
			return kept, name
		}
	}
	budget := a.cfg.Turn.CompactAt / 2
	return shortenTurn(dropOld(a.conv, budget), budget, a.markerRoom(), func(m sdk.Message, n int) string {
		return a.cut(callName(a.conv, m.ToolCallID), m.Content, n, "bingo's built-in compaction", "the current turn alone was past turn.compactAt")
	}), "the built-in compaction"
}

// callName is the name of the tool whose call in conv has the id.
func callName(conv []sdk.Message, id string) string {
	for _, m := range slices.Backward(conv) {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return "a tool"
}

// compactor returns the compactor to ask: the first registered one that
// is the person's (an untrusted project's never is: it would rewrite
// what the model reads of the person), unless it broke the rule before
// this run. The first time only an untrusted project's was there, a
// notice says the built-in compaction runs in its place.
func (a *Agent) compactor() (registry.Owned[sdk.Compactor], bool) {
	var skipped *registry.Owned[sdk.Compactor]
	for _, c := range a.cfg.Registry.Compactors() {
		if a.cfg.Plugins.Untrusted(c.Owner) {
			if skipped == nil {
				skipped = &c
			}
			continue
		}
		return c, !a.compact.refused[c.Owner+"/"+c.Value.ID()]
	}
	if skipped != nil && !a.compact.untrustedSaid {
		a.compact.untrustedSaid = true
		a.cfg.Notify(bridge.Notice{Plugin: skipped.Owner, Level: "warn", Message: fmt.Sprintf(
			"compactor %s is not asked: its project is untrusted, so the built-in compaction runs instead; %s",
			skipped.Value.ID(), a.cfg.Plugins.HowToTrust())})
	}
	return registry.Owned[sdk.Compactor]{}, false
}

// vet holds a compactor's answer to the compaction rule and returns the
// conversation to keep. The current turn (the latest prompt and all since)
// must end it, message for message: the prompt and the model's messages
// as they were, a tool result as it was or shorter (same call id; the
// host marks it as by's), since a long result is what a mid-turn
// compaction has to shrink. Before it, every message must be one of the conversation's, in its
// order — the person's words only ever verbatim — except summaries, which
// are the assistant's messages without tool calls, each marked as by's.
// No tool call may lose its result, nor a result its call, and the
// answer may not be larger than the conversation. What is kept is the
// host's own copy of each message, never the compactor's echo of it.
func vet(before, after []sdk.Message, by string) ([]sdk.Message, error) {
	turn := latestPrompt(before)
	current := before[turn:]
	head := len(after) - len(current)
	if head < 0 {
		return nil, errors.New("it did not keep the current turn (the latest prompt and everything since): each of its messages must stay, in order")
	}
	var now []sdk.Message
	for i, m := range after[head:] {
		c := current[i]
		switch {
		case same(c, m):
			now = append(now, c)
		case c.Role == sdk.RoleTool && m.Role == sdk.RoleTool && m.ToolCallID == c.ToolCallID && len(m.ToolCalls) == 0 && len(m.Content) < len(c.Content):
			now = append(now, shortened(c, m.Content, by))
		default:
			return nil, fmt.Errorf("it did not keep the current turn (the latest prompt and everything since) as it was: its message %d (%s) changed, and of the current turn only a tool result may change, made shorter, under its own call id", head+i+1, m.Role)
		}
	}
	var kept []sdk.Message
	next := 0 // the first message of before that a kept one may match
	for i, m := range after[:head] {
		k := next
		for k < turn && !same(before[k], m) {
			k++
		}
		switch {
		case k < turn:
			kept = append(kept, before[k])
			next = k + 1
		case m.Role == sdk.RoleAssistant && len(m.ToolCalls) == 0:
			kept = append(kept, sdk.Message{Role: sdk.RoleAssistant, Content: fmt.Sprintf("[a summary by %s]\n%s", by, m.Content)})
		case m.Role == sdk.RoleUser:
			return nil, fmt.Errorf("its message %d is in the person's role but is not one the person wrote there", i+1)
		default:
			return nil, fmt.Errorf("its message %d (%s) is not one of the conversation's, and only the assistant's messages without tool calls may summarise", i+1, m.Role)
		}
	}
	if !paired(kept) {
		return nil, errors.New("it separated a tool call from its result")
	}
	if size(after) > size(before) {
		return nil, errors.New("it made the conversation larger")
	}
	return append(kept, now...), nil
}

// shortened is the tool result m with content, shorter than its own,
// marked as by's: the host's copy of m when the mark would make it no
// shorter after all.
func shortened(m sdk.Message, content, by string) sdk.Message {
	marked := fmt.Sprintf("%s\n\n[%s shortened this tool result from its %d bytes.]", content, by, len(m.Content))
	if len(marked) >= len(m.Content) {
		return m
	}
	m.Content = marked
	return m
}

// VetCompaction reports why the host would refuse a compactor's answer
// after to the conversation before (see vet), or nil if it would keep it:
// what `bingo plugins check` tells a compactor's author.
func VetCompaction(before, after []sdk.Message) error {
	_, err := vet(before, after, "")
	return err
}

// latestPrompt is the index of the latest user message, or len(conv).
func latestPrompt(conv []sdk.Message) int {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == sdk.RoleUser {
			return i
		}
	}
	return len(conv)
}

// same reports whether b is a as it crossed to a plugin and back: tool
// inputs are compared as JSON values, since a plugin may re-encode them.
func same(a, b sdk.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i, c := range a.ToolCalls {
		d := b.ToolCalls[i]
		if c.ID != d.ID || c.Name != d.Name || !sameJSON(c.Input, d.Input) {
			return false
		}
	}
	return true
}

func sameAll(a, b []sdk.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !same(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}

// paired reports whether every tool call in conv is followed by its
// results and every result follows its call: a model's API refuses a
// conversation that breaks either.
func paired(conv []sdk.Message) bool {
	open := map[string]bool{}
	for _, m := range conv {
		if m.Role == sdk.RoleTool {
			if !open[m.ToolCallID] {
				return false
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return false
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	return len(open) == 0
}

// BuiltinCompact keeps the newest messages that fit in budget bytes (as
// size counts them), replacing the older ones with one note saying how many
// were dropped. It never splits a model's tool calls from their results
// and always keeps the latest prompt and all since, so the only messages
// lost are old ones it meant to drop. The note is the assistant's, not
// the person's: nothing the person did not write is put in their mouth.
// When the current turn alone is past budget, its largest tool results
// are cut to their start, each marked, until it fits (shortenTurn); the
// host's own compaction also keeps each one whole in a file.
func BuiltinCompact(conv []sdk.Message, budget int) []sdk.Message {
	const room = 100
	return shortenTurn(dropOld(conv, budget), budget, room, func(m sdk.Message, n int) string {
		head := cutAt(m.Content, n)
		return head + fmt.Sprintf("\n\n[the built-in compaction cut this tool result: the first %d of its %d bytes are above.]", len(head), len(m.Content))
	})
}

// shortenTurn cuts the current turn's largest tool results, when conv is
// past budget bytes, until it is not: every result longer than one
// length is cut to it (cut returns message m's content cut to n bytes
// and marked, the mark at most room bytes), the longest length that makes
// conv fit, or none at all when nothing does. The prompt and the model's
// messages are never touched, and a result is cut only where that saves
// bytes.
func shortenTurn(conv []sdk.Message, budget, room int, cut func(m sdk.Message, n int) string) []sdk.Message {
	over := size(conv) - budget
	if over <= 0 {
		return conv
	}
	start := latestPrompt(conv)
	longest := 0
	for _, m := range conv[min(start, len(conv)):] {
		if m.Role == sdk.RoleTool {
			longest = max(longest, len(m.Content))
		}
	}
	// saved is what cutting every result to n bytes saves: less as n grows.
	saved := func(n int) int {
		s := 0
		for _, m := range conv[min(start, len(conv)):] {
			if m.Role == sdk.RoleTool && len(m.Content) > n+room {
				s += len(m.Content) - n - room
			}
		}
		return s
	}
	n := sort.Search(longest+1, func(n int) bool { return saved(n) < over }) - 1
	n = max(n, 0)
	out := slices.Clone(conv)
	for i := start; i < len(out); i++ {
		if m := out[i]; m.Role == sdk.RoleTool && len(m.Content) > n+room {
			out[i].Content = cut(m, n)
		}
	}
	return out
}

// dropOld is BuiltinCompact's first step: the newest messages that fit in
// budget, the latest prompt and all since always among them, behind one
// note saying how many older ones were dropped.
func dropOld(conv []sdk.Message, budget int) []sdk.Message {
	latest := -1
	if i := latestPrompt(conv); i < len(conv) {
		latest = i
	}
	// Walk back from the end; a cut may only fall before a user message or
	// an assistant message (never before a tool result).
	cut, used := len(conv), 0
	for i := len(conv) - 1; i >= 0; i-- {
		used += size(conv[i : i+1])
		if used > budget && i > latest && latest >= 0 {
			break
		}
		if used > budget && (latest < 0 || i <= latest) && cut <= latest {
			break
		}
		if conv[i].Role != sdk.RoleTool {
			cut = i
		}
	}
	if latest >= 0 && cut > latest {
		cut = latest
	}
	if cut == 0 {
		return conv
	}
	note := sdk.Message{Role: sdk.RoleAssistant, Content: fmt.Sprintf("[%d earlier messages were compacted away]", cut)}
	return append([]sdk.Message{note}, conv[cut:]...)
}

// compactCommand is the host's own /compact, registered like any plugin's
// command: an in-process sdk.Command.
type compactCommand struct{ a *Agent }

func (c compactCommand) Spec() sdk.CommandSpec {
	return sdk.CommandSpec{Name: "compact", Hint: "compact the conversation", Args: sdk.CommandArgs{Kind: sdk.ArgsNone}, Instant: true, Family: "host"}
}

func (c compactCommand) Run(ctx context.Context, _ sdk.CommandRun) (sdk.CommandOutcome, error) {
	line := c.a.Compact(ctx)
	if line == "" {
		line = "nothing to compact"
	}
	return sdk.CommandOutcome{Kind: sdk.OutcomeText, Text: line}, nil
}

func (compactCommand) Complete(context.Context, sdk.CompleteRequest) ([]sdk.Completion, error) {
	return nil, nil
}
