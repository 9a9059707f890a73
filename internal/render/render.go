package render

import (
	"io"
	"strconv"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// DefaultWidth is the terminal width assumed when Options.Width is 0.
const DefaultWidth = 80

// Options says what the terminal can do. The zero value is an 80-column
// terminal without colour.
type Options struct {
	// Color allows ANSI styling (bold, dim). Without it the output holds
	// no escape sequence at all.
	Color bool
	// Width is the terminal's width in cells; 0 means DefaultWidth.
	Width int
}

const (
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

type style struct{ Options }

func (s style) bold(t string) string { return s.wrap(ansiBold, t) }
func (s style) dim(t string) string  { return s.wrap(ansiDim, t) }

func (s style) wrap(code, t string) string {
	if !s.Color || t == "" {
		return t
	}
	return code + t + ansiReset
}

// View draws v for a terminal. It writes nothing for a View that shows
// nothing, and otherwise ends with one newline.
func View(w io.Writer, v sdk.View, o Options) error {
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	out := style{o}.view(v)
	if out == "" {
		return nil
	}
	_, err := io.WriteString(w, out+"\n")
	return err
}

// Fold writes v as plain text: v.Fold() and a newline, after removing
// control characters from everything the View holds (see the package doc).
// A View without controls folds exactly as sdk.View.Fold says.
func Fold(w io.Writer, v sdk.View) error {
	_, err := io.WriteString(w, cleanView(v).Fold()+"\n")
	return err
}

// Progress replaces the terminal's current line with a tool call's live
// output line: "\r\x1b[2K", then label (the tool's name), ": " and the
// tail, without a newline. Only the tail's last line is shown (after its
// last CR or LF, as a terminal would show it), and it is taken before the
// label is added: a tail of "\rRun evil? [y/N]" still reads as the tool's.
// The line is cleaned of control characters and cut to DefaultWidth-1
// cells so that it never wraps, which would leave the next Progress
// erasing only half of it. Write errors are ignored: a lost progress line
// is harmless.
func Progress(w io.Writer, label, tail string) {
	last := ""
	for seg := range strings.FieldsFuncSeq(tail, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(seg) != "" {
			last = seg
		}
	}
	line := truncate(strings.TrimRight(clean(label+": "+last, false), " "), DefaultWidth-1)
	_, _ = io.WriteString(w, "\r\x1b[2K"+line)
}

// ClearProgress erases the live output line, leaving the cursor at the
// start of the now empty line.
func ClearProgress(w io.Writer) {
	_, _ = io.WriteString(w, "\r\x1b[2K")
}

// view renders v without a trailing newline.
func (s style) view(v sdk.View) string {
	var parts []string
	if v.Title != "" {
		parts = append(parts, s.bold(clean(v.Title, false)))
	}
	var body string
	switch v.Kind {
	case sdk.ViewTable:
		body = s.table(v.Columns, v.Rows)
	case sdk.ViewList:
		body = s.list(v.Items)
	case sdk.ViewKeyValue:
		body = s.keyValue(v.Pairs)
	case sdk.ViewStack:
		body = s.stack(v.Views)
	default: // ViewText, and any kind this version does not know: its text is the best we have.
		body = strings.TrimRight(clean(v.Text, true), "\n")
	}
	if body != "" {
		parts = append(parts, body)
	}
	return strings.Join(parts, "\n")
}

func (s style) stack(views []sdk.View) string {
	var parts []string
	for _, sub := range views {
		if r := s.view(sub); r != "" {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (s style) list(items []string) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("• ")
		b.WriteString(indent(clean(it, true), "  "))
	}
	return b.String()
}

func (s style) keyValue(pairs []sdk.KeyValue) string {
	keys := make([]string, len(pairs))
	kw := 0
	for i, p := range pairs {
		keys[i] = clean(p.Key, false) + ":"
		kw = max(kw, textWidth(keys[i]))
	}
	lines := make([]string, len(pairs))
	for i, p := range pairs {
		// Pad outside the dim span so that only the key itself is styled.
		lines[i] = strings.TrimRight(s.dim(keys[i])+strings.Repeat(" ", kw-textWidth(keys[i])+1)+
			indent(clean(p.Value, true), strings.Repeat(" ", kw+1)), " ")
	}
	return strings.Join(lines, "\n")
}

// indent puts prefix before every line of s but the first, so a multi-line
// item or value stays under where it began.
func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// table draws columns and rows in a box. Rows may be ragged: missing cells
// are empty, and cells beyond the header get a column with an empty
// header.
func (s style) table(columns []string, rows [][]string) string {
	n := len(columns)
	for _, r := range rows {
		n = max(n, len(r))
	}
	if n == 0 {
		return ""
	}
	cells := func(r []string) []string {
		c := make([]string, n)
		for i := range r {
			c[i] = clean(r[i], false)
		}
		return c
	}
	head := cells(columns)
	body := make([][]string, len(rows))
	for i, r := range rows {
		body[i] = cells(r)
	}

	widths := make([]int, n)
	for i := range n {
		widths[i] = textWidth(head[i])
		for _, r := range body {
			widths[i] = max(widths[i], textWidth(r[i]))
		}
	}
	fit(widths, s.Width, 1+3*n) // "│" + " x │" per column
	right := make([]bool, n)
	for i := range n {
		right[i] = numeric(body, i)
	}

	rule := func(l, m, r string) string {
		var b strings.Builder
		b.WriteString(l)
		for i, w := range widths {
			if i > 0 {
				b.WriteString(m)
			}
			b.WriteString(strings.Repeat("─", w+2))
		}
		b.WriteString(r)
		return b.String()
	}
	line := func(r []string, header bool) string {
		var b strings.Builder
		b.WriteString("│")
		for i, c := range r {
			c = truncate(c, widths[i])
			gap := strings.Repeat(" ", widths[i]-textWidth(c))
			if header {
				c = s.bold(c)
			}
			b.WriteString(" ")
			if right[i] && !header {
				b.WriteString(gap + c)
			} else {
				b.WriteString(c + gap)
			}
			b.WriteString(" │")
		}
		return b.String()
	}

	lines := []string{rule("┌", "┬", "┐")}
	if len(columns) > 0 {
		lines = append(lines, line(head, true))
		if len(body) > 0 {
			lines = append(lines, rule("├", "┼", "┤"))
		}
	}
	for _, r := range body {
		lines = append(lines, line(r, false))
	}
	lines = append(lines, rule("└", "┴", "┘"))
	return strings.Join(lines, "\n")
}

// fit narrows columns until these content widths and border cells of
// rules and padding fit in total cells, taking from the widest column each
// time so that narrow columns keep their whole text. No column goes below
// one cell (room for "…"): a table with too many columns for the terminal
// overflows rather than losing a column.
func fit(widths []int, total, border int) {
	sum := 0
	for _, w := range widths {
		sum += w
	}
	for sum+border > total {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= 1 {
			return
		}
		widths[widest]--
		sum--
	}
}

// numeric reports whether column i of body holds numbers only (and at
// least one): such a column reads better right-aligned.
func numeric(body [][]string, i int) bool {
	seen := false
	for _, r := range body {
		c := strings.TrimSpace(r[i])
		if c == "" {
			continue
		}
		if _, err := strconv.ParseFloat(c, 64); err != nil {
			return false
		}
		seen = true
	}
	return seen
}

// cleanView returns a copy of v with control characters removed from every
// string, keeping tabs and newlines, which plain text can show.
func cleanView(v sdk.View) sdk.View {
	c := func(s string) string { return clean(s, true) }
	out := sdk.View{Kind: v.Kind, Title: c(v.Title), Text: c(v.Text)}
	if v.Columns != nil {
		out.Columns = make([]string, len(v.Columns))
		for i, s := range v.Columns {
			out.Columns[i] = c(s)
		}
	}
	if v.Rows != nil {
		out.Rows = make([][]string, len(v.Rows))
		for i, r := range v.Rows {
			out.Rows[i] = make([]string, len(r))
			for j, s := range r {
				out.Rows[i][j] = c(s)
			}
		}
	}
	if v.Items != nil {
		out.Items = make([]string, len(v.Items))
		for i, s := range v.Items {
			out.Items[i] = c(s)
		}
	}
	if v.Pairs != nil {
		out.Pairs = make([]sdk.KeyValue, len(v.Pairs))
		for i, p := range v.Pairs {
			out.Pairs[i] = sdk.KeyValue{Key: c(p.Key), Value: c(p.Value)}
		}
	}
	if v.Views != nil {
		out.Views = make([]sdk.View, len(v.Views))
		for i, sub := range v.Views {
			out.Views[i] = cleanView(sub)
		}
	}
	return out
}
