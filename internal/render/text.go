package render

import (
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// Clean returns s as text that is safe to write to a terminal: control
// characters a terminal would act on rather than show (ESC and so every
// escape sequence, CR, backspace, BEL, the other C0 controls, DEL and the
// C1 controls) are removed, and so are the bidirectional embedding,
// override and isolate controls, which reorder what is shown so that it
// reads unlike what it is; invalid UTF-8 becomes U+FFFD. Tabs and
// newlines are kept. Use it on any multi-line text a plugin or a model
// wrote (tool output, streamed text) before printing it: otherwise the
// text could erase or redraw what bingo itself printed, such as a prompt.
func Clean(s string) string { return clean(s, true) }

// Line is Clean for text that must stay on one line (a notice, a question,
// an error message): tabs and newlines become spaces as well, so the text
// cannot start a line of its own that looks like bingo's.
func Line(s string) string { return clean(s, false) }

// clean removes the characters a terminal would act on rather than show:
// C0 controls (except tab and newline when keepLayout), DEL, C1 controls
// and bidi controls; invalid UTF-8 becomes U+FFFD. Without keepLayout, tabs and
// newlines become spaces, for text that must stay on one line.
func clean(s string, keepLayout bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	ok := true
	for _, r := range s {
		if isControl(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n':
			if keepLayout {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case isControl(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl reports whether r is a character clean removes. The bidi
// controls (U+202A–U+202E embeddings and overrides, U+2066–U+2069
// isolates) are not terminal controls, but a terminal that lays text out
// by them shows "exe.txt" for "txt.exe" spelt backwards, and a plugin's
// text must read as what it is.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (0x80 <= r && r <= 0x9f) ||
		(0x202a <= r && r <= 0x202e) || (0x2066 <= r && r <= 0x2069)
}

// runeWidth is how many terminal cells r takes.
func runeWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) {
		return 0 // combining marks and format characters (ZWJ) join the previous cell
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// textWidth is how many terminal cells s takes on one line.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// truncate cuts s to at most n cells, ending it with "…" when it cut.
func truncate(s string, n int) string {
	if textWidth(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := runeWidth(r)
		if used+rw > n-1 {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString("…")
	return b.String()
}

// Block returns s, a plugin's text shown beside one of bingo's own prompts
// (a question), as at most maxLines lines holding at most maxChars
// characters in all: cleaned as Clean does, each run of blank characters
// (spaces, tabs, and the fillers that draw as blank cells) made one
// space, each run of blank lines made one blank line, and blank lines at
// either end dropped. What had to be cut ends in "…". So however much a
// plugin writes, it cannot push the prompt's own words off the screen,
// nor fill the screen with blank space above text of its choosing.
func Block(s string, maxLines, maxChars int) []string {
	var lines []string
	left := maxChars
	gap := false // a blank line is owed before the next line with text
	for l := range strings.SplitSeq(Clean(s), "\n") {
		l = squeeze(l)
		switch {
		case l == "":
			gap = len(lines) > 0
			continue
		case gap && len(lines)+2 > maxLines, len(lines)+1 > maxLines:
			return cut(lines)
		case gap:
			lines = append(lines, "")
			gap = false
		}
		r := []rune(l)
		if len(r) > left {
			return cut(append(lines, string(r[:left])))
		}
		lines = append(lines, l)
		left -= len(r)
	}
	return lines
}

// Brief is Line cut to maxChars characters (then "…"), its runs of blank
// characters made one space: how a plugin's, a server's or a model's text
// is quoted inside one of bingo's one-line messages or prompts, whatever
// it sent.
func Brief(s string, maxChars int) string {
	l := squeeze(Line(s))
	if r := []rune(l); len(r) > maxChars {
		return string(r[:maxChars]) + "…"
	}
	return l
}

// cut marks lines as cut short: its last line ends in "…".
func cut(lines []string) []string {
	if len(lines) == 0 {
		return []string{"…"}
	}
	lines[len(lines)-1] += "…"
	return lines
}

// squeeze makes each run of blank characters in l one space, and drops
// those at its ends.
func squeeze(l string) string {
	return strings.Join(strings.FieldsFunc(l, isBlank), " ")
}

// isBlank reports whether r draws as blank space: white space, and the
// fillers that take a cell without showing anything (Hangul fillers,
// the blank Braille pattern).
func isBlank(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800':
		return true
	}
	return unicode.IsSpace(r)
}
