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
	breakLine := func() {
		lines = append(lines, line.String())
		line.Reset()
		used = 0
	}
	// Word by word, piece by piece, so that what Whole holds beyond its
	// answer is one mark, however long s is.
	for i := 0; i < len(s); {
		if asciiBlank(rune(s[i])) {
			i++
			continue
		}
		j := i
		for j < len(s) && !asciiBlank(rune(s[j])) {
			j++
		}
		word := s[i:j]
		i = j
		// A word that fits on a line of its own moves there whole; a
		// longer one is broken wherever its pieces meet the edge.
		ww := 0
		pieces(word, func(_ string, cells int) { ww += cells })
		spaced := used > 0
		if spaced && ww <= width && used+1+ww > width {
			breakLine()
			spaced = false
		}
		pieces(word, func(text string, cells int) {
			gap := 0
			if spaced {
				gap = 1
			}
			spaced = false
			if used > 0 && used+gap+cells > width {
				breakLine()
			} else if gap > 0 {
				line.WriteByte(' ')
				used++
			}
			line.WriteString(text)
			used += cells
		})
	}
	if used > 0 || len(lines) == 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// pieces calls each with every piece of word (which holds no ASCII blank)
// that Whole never breaks, and the cells it takes: a visible character, or
// the mark of a run of one invisible character or of an invalid byte.
func pieces(word string, each func(text string, cells int)) {
	for i := 0; i < len(word); {
		if c := word[i]; c > ' ' && c < 0x7f { // printable ASCII, most of any command line
			each(word[i:i+1], 1)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(word[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			each(fmt.Sprintf("<0x%02X>", word[i]), len("<0xFF>"))
			i++
		case Invisible(r):
			n := 0
			for i < len(word) {
				next, sz := utf8.DecodeRuneInString(word[i:])
				if next != r || (next == utf8.RuneError && sz <= 1) {
					break
				}
				n++
				i += sz
			}
			m := fmt.Sprintf("<U+%04X>", r)
			if n > 1 {
				m = fmt.Sprintf("<U+%04X ×%d>", r, n)
			}
			each(m, textWidth(m))
		default:
			each(word[i:i+size], runeWidth(r))
			i += size
		}
	}
}

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
