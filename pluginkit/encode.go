package pluginkit

import (
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// This file writes the wire's hot messages — a tool call's answer, its
// progress lines, an error — without reflection, byte for byte as
// encoding/json writes them (workers in declaration order, HTML-safe
// escaping, invalid UTF-8 as U+FFFD). encode_test.go holds each to
// json.Marshal. Every other message goes through encoding/json.

// lines are the buffers messages are built in; one that grew past
// keptLine is left to the garbage collector rather than kept.
var lines = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const keptLine = 64 << 10

// sendBuilt builds a message with build and writes it as one line.
func (w *wire) sendBuilt(build func([]byte) ([]byte, error)) error {
	bp := lines.Get().(*[]byte)
	b, err := build((*bp)[:0])
	if err == nil {
		err = lineOut{w}.write(append(b, '\n'))
	}
	if cap(b) <= keptLine {
		*bp = b
		lines.Put(bp)
	}
	return err
}

// sendResult answers id with res.
func (w *wire) sendResult(id json.RawMessage, res any) error {
	out, ok := res.(protocol.ToolCallResult)
	if !ok {
		return w.send(resultMsg{ID: id, Result: res, JSONRPC: "2.0"})
	}
	return w.sendBuilt(func(b []byte) ([]byte, error) {
		b = append(b, `{"id":`...)
		b = append(b, id...)
		b = append(b, `,"result":{"output":`...)
		b, err := appendToolOutput(b, out.Output)
		return append(b, `},"jsonrpc":"2.0"}`...), err
	})
}

// sendError answers id with e.
func (w *wire) sendError(id json.RawMessage, e *wireError) error {
	return w.sendBuilt(func(b []byte) ([]byte, error) {
		b = append(b, `{"id":`...)
		b = append(b, id...)
		b = append(b, `,"error":{"code":`...)
		b = strconv.AppendInt(b, e.Code, 10)
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
		return append(b, `},"jsonrpc":"2.0"}`...), nil
	})
}

// sendProgress writes a tool/progress notification.
func (w *wire) sendProgress(p protocol.ToolProgress) error {
	return w.sendBuilt(func(b []byte) ([]byte, error) {
		b = append(b, `{"jsonrpc":"2.0","method":"tool/progress","params":{"callId":`...)
		b = appendString(b, p.CallID)
		b = append(b, `,"tail":`...)
		b = appendString(b, p.Tail)
		return append(b, `}}`...), nil
	})
}

// appendToolOutput appends o as encoding/json encodes an sdk.ToolOutput.
// Its View, when it has one, is left to encoding/json.
func appendToolOutput(b []byte, o sdk.ToolOutput) ([]byte, error) {
	b = append(b, `{"parts":`...)
	if o.Parts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range o.Parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendString(b, p.Type)
			b = append(b, `,"text":`...)
			b = appendString(b, p.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if o.Display != nil {
		v, err := json.Marshal(o.Display)
		if err != nil {
			return b, err
		}
		b = append(b, `,"display":`...)
		b = append(b, v...)
	}
	if o.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

const hex = "0123456789abcdef"

// htmlSafe reports whether every byte of x is ASCII that encoding/json
// writes as it is: not a control character, quote, backslash, <, > or &.
func htmlSafe(x uint64) bool {
	return x&msb|hasLess(x, 0x20)|hasByte(x, '"')|hasByte(x, '\\')|hasByte(x, '<')|hasByte(x, '>')|hasByte(x, '&') == 0
}

// wordAt is the eight bytes of s from i, little-endian.
func wordAt(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping on (its default): <, > and & as \u escapes, control
// characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes a turn while all of them go out as they are.
		for len(s)-i >= 8 && htmlSafe(wordAt(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
