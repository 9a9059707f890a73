package protocol

import (
	"bytes"
	"fmt"
)

// MaxDepth is how deeply arrays and objects may nest in a message:
// encoding/json's own limit, which the plugin wire's decoders hold to. The
// MCP wire's decoder (segmentio's, as the go-sdk's) recurses once per
// level with no limit of its own, and grows slower than linearly with the
// depth: a line nested millions deep overflows the host's stack, which no
// recover catches. So every MCP path checks a message with Nesting before
// it decodes it.
const MaxDepth = 10000

// ErrTooDeep is why a message nested deeper than MaxDepth was refused.
var ErrTooDeep = fmt.Errorf("nested deeper than %d arrays and objects", MaxDepth)

// Nesting follows how deeply the arrays and objects of JSON text nest,
// outside its strings, in one pass over the text, which may come in
// pieces: the cheap check that lets a recursive decoder meet only text it
// can decode. It does not otherwise check that the text is JSON; the
// decoder does that. The zero value is at the start of a text.
type Nesting struct {
	depth    int
	inString bool // inside a string
	escaped  bool // just after its backslash
	tooDeep  bool
}

// Write follows p, the next piece of the text, and returns ErrTooDeep once
// the text has nested deeper than MaxDepth (and for every piece after).
func (n *Nesting) Write(p []byte) (int, error) {
	if n.tooDeep {
		return 0, ErrTooDeep
	}
	for i := 0; i < len(p); i++ {
		if n.inString {
			if n.escaped {
				n.escaped = false
				continue
			}
			// Strings are most of a message: jump to what can end one.
			j := bytes.IndexAny(p[i:], `"\`)
			if j < 0 {
				return len(p), nil
			}
			i += j
			if p[i] == '\\' {
				n.escaped = true
			} else {
				n.inString = false
			}
			continue
		}
		switch p[i] {
		case '"':
			n.inString = true
		case '[', '{':
			if n.depth++; n.depth > MaxDepth {
				n.tooDeep = true
				return i, ErrTooDeep
			}
		case ']', '}':
			if n.depth > 0 {
				n.depth--
			}
		}
	}
	return len(p), nil
}

// CheckDepth returns ErrTooDeep if the arrays and objects of the message
// line nest deeper than MaxDepth, in one pass over it.
func CheckDepth(line []byte) error {
	var n Nesting
	_, err := n.Write(line)
	return err
}
