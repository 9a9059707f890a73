package protocol

import (
	"bytes"
	"fmt"
)

// MaxDepth is how deeply arrays and objects may nest in a message on the
// plugin wire: encoding/json's own limit, which its decoders hold to.
const MaxDepth = 10000

// DepthError is text whose arrays and objects nest deeper than Max.
type DepthError struct{ Max int }

func (e *DepthError) Error() string {
	return fmt.Sprintf("nested deeper than %d arrays and objects", e.Max)
}

// Nesting follows how deeply the arrays and objects of JSON text nest,
// outside its strings, in one pass over the text, which may come in
// pieces: the cheap check that lets a recursive decoder with no limit of
// its own (segmentio's, which the MCP wire uses) meet only text it can
// decode, where a line nested millions deep overflows the stack, which no
// recover catches. It does not otherwise check that the text is JSON; the
// decoder does that. The zero value is at the start of a text, with
// MaxDepth as its limit.
type Nesting struct {
	// Max is the deepest nesting allowed; 0 means MaxDepth.
	Max      int
	depth    int
	inString bool // inside a string
	escaped  bool // just after its backslash
	tooDeep  bool
}

// Write follows p, the next piece of the text, and returns a *DepthError
// once the text has nested deeper than Max (and for every piece after).
func (n *Nesting) Write(p []byte) (int, error) {
	if n.Max <= 0 {
		n.Max = MaxDepth
	}
	if n.tooDeep {
		return 0, &DepthError{Max: n.Max}
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
			if n.depth++; n.depth > n.Max {
				n.tooDeep = true
				return i, &DepthError{Max: n.Max}
			}
		case ']', '}':
			if n.depth > 0 {
				n.depth--
			}
		}
	}
	return len(p), nil
}

// CheckDepth returns a *DepthError if the arrays and objects of the
// message line nest deeper than max (0: MaxDepth), in one pass over it.
func CheckDepth(line []byte, max int) error {
	n := Nesting{Max: max}
	_, err := n.Write(line)
	return err
}
