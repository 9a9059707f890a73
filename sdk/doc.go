// Package sdk is the kernel's contract: the serialisable value types that
// cross between the host and its plugins (ToolSpec, ToolOutput, CommandSpec,
// CommandOutcome, Completion, View, ToolTraits, HookOutcome, Query, Piece,
// Compaction, provider requests and stream events) and the interfaces every
// contribution implements (Tool, Command, Contributor, Compactor, Provider,
// Hook, Service).
//
// In-process implementations and the bridge's proxies satisfy the same
// interfaces: there is no parallel remote hierarchy. The package imports
// nothing else of this module, so every other package can share it.
//
// JSON field names are camelCase: these types are the wire's own, and the
// bridge adds envelopes around them (package protocol), never shapes.
package sdk
