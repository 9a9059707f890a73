package pluginkit

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// This file reads the wire's messages without reflection. Inside a wasm
// guest every function call and loop costs several times what it does
// natively (Go's wasm code dispatches each through a resume loop, and the
// sandbox meters each loop header), so encoding/json (a function call per
// byte scanned, then reflection) costs tens of times what it does
// natively. Here a line
// is split into its workers by a hand-written scanner that accepts exactly
// the JSON encoding/json accepts, reading strings eight bytes at a time,
// and a tool call's params are decoded in the same pass when they are
// plain. Anything unusual (an escaped string, a name that matches a field
// only ignoring case, a value of another type) goes to encoding/json, so
// the result is always the one encoding/json gives. scan_test.go holds it
// to that.

// maxDepth is encoding/json's nesting limit: deeper text is not JSON to it.
const maxDepth = 10000

// scanner walks one JSON text.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the usual case, without entering a loop
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips one value, reporting whether it is valid JSON.
func (s *scanner) value(depth int) bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		return s.object(depth + 1)
	case '[':
		return s.array(depth + 1)
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number skips a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	s.i = i
	return true
}

// str skips a string starting at its quote. plain says its bytes are its
// value: no escapes and nothing but ASCII (encoding/json turns invalid
// UTF-8 into U+FFFD, which ASCII cannot hold).
//
// It goes eight bytes a turn, and from a word holding a quote, a
// backslash or a control character straight to the first of them: a run
// of plain text costs one loop turn per word, not one per byte.
func (s *scanner) str() (plain, ok bool) {
	b := s.b
	var high uint64 // the high bits of every byte before a stop
	plain = true
	i := s.i + 1
	for {
		if len(b)-i >= 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			stops := hasByte(x, '"') | hasByte(x, '\\') | hasLess(x, 0x20)
			if stops == 0 {
				high |= x
				i += 8
				continue
			}
			// The lowest flagged byte is a true stop (borrows only
			// flag bytes above one).
			n := bits.TrailingZeros64(stops) / 8
			high |= x & (1<<(8*n) - 1)
			i += n
		} else if i >= len(b) {
			return false, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return plain && high&msb == 0, true
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return false, false
				}
				i += 4
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		case c >= utf8.RuneSelf:
			plain = false
		}
		i++
	}
}

func isHex(h byte) bool { return h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F' }

// Bytes-in-a-word tests (Anderson's bit hacks): each is non-zero exactly
// when some byte of x is zero, is c, is below n (n ≤ 128).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func hasZero(x uint64) uint64         { return (x - lsb) & ^x & msb }
func hasByte(x uint64, c byte) uint64 { return hasZero(x ^ (lsb * uint64(c))) }
func hasLess(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) & ^x & msb }

func (s *scanner) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// object skips an object, validating it.
func (s *scanner) object(depth int) bool {
	if !s.enter(depth) {
		return false
	}
	for first := true; ; first = false {
		_, _, more, ok := s.next(first)
		if !ok || !more {
			return ok
		}
		if !s.value(depth) {
			return false
		}
	}
}

// span skips one value and returns its bytes.
func (s *scanner) span(depth int) ([]byte, bool) {
	start := s.i
	ok := s.value(depth)
	return s.b[start:s.i], ok
}

// whole reports whether nothing but white space is left.
func (s *scanner) whole() bool {
	s.space()
	return s.i == len(s.b)
}

// at reports whether the next byte is c.
func (s *scanner) at(c byte) bool {
	s.space()
	return s.i < len(s.b) && s.b[s.i] == c
}

// unquote decodes a JSON string (its quotes included) as encoding/json
// does; plain says its bytes between the quotes are its value.
func unquote(raw []byte, plain bool) (string, bool) {
	if plain {
		return string(raw[1 : len(raw)-1]), true
	}
	var v string
	return v, json.Unmarshal(raw, &v) == nil
}

// memberName is a worker's name as encoding/json reads it.
func memberName(name []byte, plain bool) ([]byte, bool) {
	if plain {
		return name, true
	}
	q := make([]byte, 0, len(name)+2)
	n, ok := unquote(append(append(append(q, '"'), name...), '"'), false)
	return []byte(n), ok
}

// enter moves past the { the scanner is at, into an object at depth.
func (s *scanner) enter(depth int) bool {
	s.i++
	return depth <= maxDepth
}

// next moves to the next worker of the object the scanner is in, from
// just inside its { (first) or just after a worker's value. It returns the
// worker's name as written, without its quotes (plain as str says), and
// leaves the scanner at its value; more is false at the object's end,
// which it moves past.
func (s *scanner) next(first bool) (name []byte, plain, more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return nil, false, false, false
	}
	switch c := s.b[s.i]; {
	case c == '}' && first:
		s.i++
		return nil, false, false, true
	case first:
	case c == '}':
		s.i++
		return nil, false, false, true
	case c == ',':
		s.i++
		s.space()
	default:
		return nil, false, false, false
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false, false
	}
	start := s.i
	if plain, ok = s.str(); !ok {
		return nil, false, false, false
	}
	name = s.b[start+1 : s.i-1]
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, false, false
	}
	s.i++
	s.space()
	return name, plain, true, true
}

// methodName is the method the scanner is at, a JSON string: the
// protocol's own constant when it is one of the kit's, so the hot path
// allocates no copy of it.
func (s *scanner) methodName() (string, bool) {
	start := s.i
	plain, ok := s.str()
	if !ok {
		return "", false
	}
	raw := s.b[start:s.i]
	if plain {
		switch string(raw[1 : len(raw)-1]) {
		case protocol.MethodToolCall:
			return protocol.MethodToolCall, true
		case protocol.NotifyToolCancel:
			return protocol.NotifyToolCancel, true
		}
	}
	return unquote(raw, plain)
}

// parseEnvelope splits line into the envelope encoding/json decodes from
// it, naming workers exactly, as JSON-RPC does. It reports false for a
// line that is not valid JSON, not an object, or whose method is neither a
// string nor null: encoding/json refuses those too.
//
// A tool call's params are decoded in the same pass when the method comes
// before them, as the host's jsonrpc2 writes it (workers sorted): into
// m.tool, with m.toolCall set if they were plain (see toolCallParamsAt).
func parseEnvelope(line []byte, m *envelope) bool {
	*m = envelope{}
	s := &scanner{b: line}
	if !s.at('{') || !s.enter(1) {
		return false
	}
	for first := true; ; first = false {
		name, plain, more, ok := s.next(first)
		if !ok {
			return false
		}
		if !more {
			return s.whole()
		}
		if name, ok = memberName(name, plain); !ok {
			return false
		}
		switch string(name) {
		case "params":
			m.toolCall = false
			if m.Method != nil && *m.Method == protocol.MethodToolCall && s.at('{') {
				start := s.i
				plain, ok := s.toolCallParamsAt(&m.tool, 2)
				m.Params, m.toolCall = line[start:s.i], plain
				if !ok {
					return false
				}
				continue
			}
			m.Params, ok = s.span(1)
		case "method":
			m.toolCall = false // params read before it were not read as a tool call's
			switch {
			case s.at('"'):
				var str string
				str, ok = s.methodName()
				m.Method = &str
			case s.at('n'):
				m.Method = nil
				ok = s.literal("null")
			default:
				return false // a method of another type: encoding/json refuses it
			}
		case "id":
			m.ID, ok = s.span(1)
		case "result":
			m.Result, ok = s.span(1)
		case "error":
			m.Error, ok = s.span(1)
		default:
			ok = s.value(1)
		}
		if !ok {
			return false
		}
	}
}

// toolCallParams decodes a tool call's params into p as encoding/json
// does: without reflection when they are plain (see toolCallParamsAt),
// with encoding/json otherwise.
func toolCallParams(raw []byte, p *protocol.ToolCallParams) error {
	s := &scanner{b: raw}
	if s.at('{') {
		if plain, ok := s.toolCallParamsAt(p, 1); plain && ok && s.whole() {
			return nil
		}
	}
	*p = protocol.ToolCallParams{}
	return json.Unmarshal(raw, p)
}

// toolCallParamsAt reads the object the scanner is at, at depth, into p
// as encoding/json does when it is plain: workers named exactly as the
// fields, strings in ASCII without escapes, an integer turn. ok says the
// object is valid JSON; plain false says encoding/json must decode it
// instead.
func (s *scanner) toolCallParamsAt(p *protocol.ToolCallParams, depth int) (plain, ok bool) {
	*p = protocol.ToolCallParams{}
	if !s.enter(depth) {
		return false, false
	}
	plain = true
	for first := true; ; first = false {
		name, plainName, more, ok := s.next(first)
		if !ok || !more {
			return plain, ok
		}
		if !plainName || !plain {
			plain = false
			if !s.value(depth) {
				return false, false
			}
			continue
		}
		var dst *string
		switch string(name) {
		case "callId":
			dst = &p.CallID
		case "name":
			dst = &p.Name
		case "cwd":
			dst = &p.Cwd
		case "session":
			dst = &p.Session
		case "input":
			v, ok := s.span(depth)
			if !ok {
				return false, false
			}
			p.Input = json.RawMessage(v[:len(v):len(v)]) // the line is this call's alone
			continue
		case "turn":
			v, ok := s.span(depth)
			switch {
			case !ok:
				return false, false
			case v[0] == 'n':
			case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
				n, err := strconv.ParseInt(string(v), 10, 64)
				p.Turn = int(n)
				plain = plain && err == nil
			default:
				plain = false
			}
			continue
		default:
			// encoding/json matches a name to a field ignoring case (and
			// folding a few non-ASCII letters): leave those to it.
			if foldsToField(name) {
				plain = false
			}
			if !s.value(depth) {
				return false, false
			}
			continue
		}
		switch {
		case s.at('"'):
			start := s.i
			plainStr, ok := s.str()
			if !ok {
				return false, false
			}
			*dst = string(s.b[start+1 : s.i-1])
			plain = plain && plainStr
		case s.at('n'): // null leaves a field as it is
			if !s.literal("null") {
				return false, false
			}
		default:
			plain = false
			if !s.value(depth) {
				return false, false
			}
		}
	}
}

// foldsToField reports whether encoding/json might match name to a field
// of ToolCallParams other than by its exact name.
func foldsToField(name []byte) bool {
	for _, f := range [...]string{"callId", "name", "input", "cwd", "session", "turn"} {
		if len(f) == len(name) && equalFoldASCII(f, name) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a string, b []byte) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
