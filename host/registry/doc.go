// Package registry holds what the plugins of one run contribute, by the
// sdk's own interfaces, so that a plugin's proxy and the host's own
// in-process implementation are registered and used alike.
//
// Rules:
//   - Every contribution has an owner: the plugin's name, or "" for the
//     host's own.
//   - A name only one may keep (a tool, a command, a service key) goes to
//     the owner that ranks higher: the host first, then New's rank, then
//     the first by name, whatever the order of registration. The loser is
//     told in one notice, and its claim waits: it takes the name when the
//     keeper lets it go.
//   - Replace swaps one plugin's contributions for a new declaration under
//     one lock, so no reader sees it half replaced; a name it keeps never
//     passes through another's hands, and a clash is not told twice.
//   - The service key bingo.host is the host's and is refused.
package registry
