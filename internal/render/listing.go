package render

import (
	"io"
	"strings"
)

// ListingRow is one row of a Listing: its cells, and a note shown under it
// (why a plugin failed, say), or "": each of its lines a line of its own.
type ListingRow struct {
	Cells []string
	Note  string
}

// listingGap is the blank cells between two columns of a Listing, and
// listingIndent what a line under a row starts with.
const (
	listingGap    = "  "
	listingIndent = "    "
)

// minListWidth is the fewest cells a Listing's last column keeps beside
// the others; with less, it goes under its row instead.
const minListWidth = 30

// Listing writes header and rows as plain columns two spaces apart, no
// line wider than width cells (at least 40), for a listing that must stay
// readable however much one row holds. The last column is a list of items
// separated by ", ": one too long for its line wraps onto lines of its
// own under itself, or, when the other columns leave it fewer than 30
// cells or an item would not fit them, goes under its row, indented. A row's note goes under the row, indented, wrapped at spaces.
// Every cell and note is cleaned to one line (Line); when the other
// columns alone are wider than width, their widest cells are cut with
// "…"; a word too long for its line is broken.
func Listing(w io.Writer, header []string, rows []ListingRow, width int) error {
	width = max(width, 40)
	n := len(header)
	table := make([][]string, 0, len(rows)+1)
	table = append(table, header)
	for _, r := range rows {
		table = append(table, r.Cells)
	}
	widths := make([]int, n-1) // every column but the list
	for _, r := range table {
		for i := range widths {
			if i < len(r) {
				widths[i] = max(widths[i], textWidth(Line(r[i])))
			}
		}
	}
	gaps := len(widths) * len(listingGap)
	fit(widths, width, gaps)
	left := gaps
	for _, wd := range widths {
		left += wd
	}
	listWidth := width - left

	var b strings.Builder
	for k, r := range table {
		var line strings.Builder
		for i, wd := range widths {
			c := ""
			if i < len(r) {
				c = truncate(Line(r[i]), wd)
			}
			line.WriteString(c + strings.Repeat(" ", wd-textWidth(c)) + listingGap)
		}
		list := ""
		if n-1 < len(r) {
			list = Line(r[n-1])
		}
		var more []string
		switch parts := wrap(list, max(listWidth, 1), ", "); {
		case len(parts) <= 1 && textWidth(list) <= listWidth:
			line.WriteString(list)
		case k == 0:
			line.WriteString(truncate(list, listWidth)) // the header
		case listWidth < minListWidth || widestItem(list) > listWidth:
			// Under the row, an item (a tool's name) keeps its line whole.
			more = wrap(list, width-len(listingIndent), ", ")
		default:
			line.WriteString(parts[0])
			for _, p := range parts[1:] {
				b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
				line.Reset()
				line.WriteString(strings.Repeat(" ", left) + p)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		for _, p := range more {
			b.WriteString(listingIndent + p + "\n")
		}
		if k > 0 && rows[k-1].Note != "" {
			for _, note := range strings.Split(rows[k-1].Note, "\n") {
				for _, p := range wrap(Line(note), width-len(listingIndent), " ") {
					b.WriteString(listingIndent + p + "\n")
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// widestItem is the width of the widest item of a ", "-separated list.
func widestItem(list string) int {
	w := 0
	for _, item := range strings.Split(list, ", ") {
		w = max(w, textWidth(item))
	}
	return w
}

// wrap breaks s into lines of at most width cells, after a sep where it
// can (sep stays at the end of its line, trailing blanks dropped), and
// anywhere within a piece longer than a line.
func wrap(s string, width int, sep string) []string {
	if s == "" {
		return nil
	}
	var lines []string
	cur := ""
	for _, piece := range strings.SplitAfter(s, sep) {
		if cur != "" && textWidth(strings.TrimRight(cur+piece, " ")) > width {
			lines = append(lines, strings.TrimRight(cur, " "))
			cur = ""
		}
		cur += piece
		for textWidth(strings.TrimRight(cur, " ")) > width {
			head, rest := splitCells(cur, width)
			lines = append(lines, head)
			cur = rest
		}
	}
	if cur = strings.TrimRight(cur, " "); cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// splitCells splits s after its first n cells (at least one rune).
func splitCells(s string, n int) (head, rest string) {
	used := 0
	for i, r := range s {
		rw := runeWidth(r)
		if used+rw > n && i > 0 {
			return s[:i], s[i:]
		}
		used += rw
	}
	return s, ""
}
