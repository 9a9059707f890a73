package manifest

import (
	"errors"
	"fmt"
)

// MaxNameLen is the longest plugin name accepted.
const MaxNameLen = 40

// ErrInvalidName is wrapped by every error [ValidName] returns.
var ErrInvalidName = errors.New("invalid plugin name")

// ValidName reports whether name may name a plugin: 1 to 40 characters of
// a-z, 0-9 and "-", the first a letter or a digit. The name becomes a file
// name (the plugin's directory, its log file) and the middle segment of tool
// names plugin__<name>__<tool>, so it admits no "_" (and hence no "__"), no
// upper case (file systems that fold case would merge two plugins), no "."
// and no path separator. The error wraps [ErrInvalidName] and says the rule.
func ValidName(name string) error {
	const rule = `a plugin name is 1 to 40 characters of a-z, 0-9 and "-", starting with a letter or a digit (it becomes a directory name and the <name> in tool names plugin__<name>__<tool>)`
	if name == "" {
		return fmt.Errorf("%w: empty; %s", ErrInvalidName, rule)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: %d characters, more than %d; %s", ErrInvalidName, name, len(name), MaxNameLen, rule)
	}
	pos := 0
	for i, c := range name {
		pos++
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("%w %q: character %q at position %d is not allowed; %s", ErrInvalidName, name, c, pos, rule)
		}
	}
	return nil
}
