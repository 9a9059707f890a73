// Package agent runs one conversation over a plugin set: its turns, its
// compaction and the tool calls the model asks for. It reaches the
// plugins only through their registry (package registry) and the Plugins
// interface (package host's Host), so the loop reads apart from how
// plugins are found, started and trusted.
//
// Rules:
//   - A tool call (CallTool) runs the hooks at tool/before, then the gate,
//     then the tool; hooks can only tighten: their verdict is combined
//     with the gate's, never in place of it (there is no Allow outcome).
//     The host names every call itself, uniquely in the session; the
//     model's id is kept only for the result sent back.
//   - A turn (Turn) gathers context from every contributor at once (a late
//     one is dropped with a notice), compacts past turn.compactAt, sends
//     the request through the hooks at prompt/before, streams the answer,
//     runs the calls it asks for, and repeats until an answer without
//     calls or turn.maxSteps. Every call the model asked for gets a
//     result, run or not, so the conversation stays well-formed.
//   - What plugins put in the model's context is held apart from what the
//     person said: every contributed piece reaches the model in a
//     <context from="plugin NAME"> block its text cannot close, within
//     ContributionBudget characters per contributor (an untrusted
//     project's contributors share one).
//   - A compactor's answer is vetted (VetCompaction): the current turn as
//     it was but for tool results made shorter (marked as its), the
//     person's messages only verbatim and in order, its own words only as
//     marked assistant summaries. One that breaks the rule
//     is refused and not asked again this run; an untrusted project's is
//     never asked. The built-in compaction runs in their place; it cuts
//     the current turn's largest results when that turn alone is past
//     the budget.
//   - What reaches the model is bounded: a tool result past
//     turn.toolResultMax is cut and kept whole in a file (results.go); a
//     tool a deny rule covers is not offered, and past turn.toolsMax the
//     model finds tools with bingo__tool_search (tools.go).
//   - One turn runs at a time; turn/end and tool/after are observed
//     without waiting (Plugins.Observe).
package agent
