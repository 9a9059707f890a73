package render

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Whole returns s, text the person must see all of before deciding on it
// (a command line a repository would run), as lines of at most width
// cells, cutting nothing. Each run of ASCII blanks (space, tab, newline and
// the other ASCII white space) becomes one space, and those at either end
// are dropped, so a run of spaces cannot push the rest of a line out of
// sight. Every character that shows as nothing or as blank space, or
// that a terminal would act on rather than show (controls, zero-width,
// bidi and other format characters, non-ASCII spaces, fillers, variation
// selectors, private-use and unassigned code points), is written as its
// code point, <U+200B>, and a run of one such character as one mark with
// its count, <U+200B ×300>; an invalid byte is written <0xFF>. Such a
// character separates no words for a shell, so it must not read as a
// space either. Lines break between words where they can, and inside a
// word longer than width, never inside a mark; no line but the first
// starts with a space. width below 16 is taken as 16.
func Whole(s string, width int) []string {
	width = max(width, 16)
	var lines []string
	var line strings.Builder
	used := 0
	// put adds one unbreakable piece of cw cells, after a space if
	// spaced, breaking the line before it when it does not fit.
	put := func(piece string, cw int, spaced bool) {
		if spaced && used > 0 {
			if used+1+cw <= width {
				line.WriteByte(' ')
				used++
			} else {
				lines = append(lines, line.String())
				line.Reset()
				used = 0
			}
		} else if used > 0 && used+cw > width {
			lines = append(lines, line.String())
			line.Reset()
			used = 0
		}
		line.WriteString(piece)
		used += cw
	}
	for _, w := range wholeWords(s) {
		// A word that fits on a line of its own moves there whole; a
		// longer one is broken wherever its pieces meet the edge.
		spaced := true
		if ww := wordWidth(w); ww <= width && used > 0 && used+1+ww > width {
			lines = append(lines, line.String())
			line.Reset()
			used = 0
		}
		for _, p := range w {
			put(p.text, p.cells, spaced)
			spaced = false
		}
	}
	if used > 0 || len(lines) == 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// piece is a part of a word that Whole never breaks: a visible character
// or the mark of an invisible run.
type piece struct {
	text  string
	cells int
}

func wordWidth(w []piece) int {
	n := 0
	for _, p := range w {
		n += p.cells
	}
	return n
}

// wholeWords splits s at its runs of ASCII blanks into words of pieces,
// each invisible run or invalid byte a mark.
func wholeWords(s string) [][]piece {
	var words [][]piece
	var word []piece
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			word = append(word, mark(fmt.Sprintf("<0x%02X>", s[i])))
			i++
		case asciiBlank(r):
			if len(word) > 0 {
				words = append(words, word)
				word = nil
			}
			i += size
		case Invisible(r):
			n := 0
			for i < len(s) {
				next, sz := utf8.DecodeRuneInString(s[i:])
				if next != r || (next == utf8.RuneError && sz <= 1) {
					break
				}
				n++
				i += sz
			}
			if n == 1 {
				word = append(word, mark(fmt.Sprintf("<U+%04X>", r)))
			} else {
				word = append(word, mark(fmt.Sprintf("<U+%04X ×%d>", r, n)))
			}
		default:
			word = append(word, piece{text: s[i : i+size], cells: runeWidth(r)})
			i += size
		}
	}
	if len(word) > 0 {
		words = append(words, word)
	}
	return words
}

func mark(s string) piece { return piece{text: s, cells: textWidth(s)} }

func asciiBlank(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// Invisible reports whether r shows as nothing, or as blank space without
// being an ASCII blank, or is one a terminal acts on: Whole writes such a
// character as its code point.
func Invisible(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x7f:
		return false
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return true
	case r == '\u2800': // the blank Braille pattern draws an empty cell
		return true
	}
	return !unicode.IsGraphic(r) // unassigned: no font shows it as anything
}
