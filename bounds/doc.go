// Package bounds holds the deadlines and limits of a crossing between the
// host and a plugin as plain values: package bridge enforces them,
// mcpbridge applies them to an MCP server, host/openai holds the built-in
// provider's streams to the provider ones, and the host's settings read
// them from the person's files. It imports nothing of this module, so
// each of those can depend on it without depending on another.
//
// Rules:
//   - A zero (or negative) field means its default: WithDefaults fills
//     them, and DefaultDeadlines and DefaultLimits are the defaults.
//   - What a field bounds, and what happens past it, is the enforcer's
//     (package bridge's doc); this package only names and defaults them.
package bounds
