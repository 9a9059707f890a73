package sdk

import (
	"strings"
	"unicode/utf8"
)

// ViewKind tags a View.
type ViewKind string

const (
	ViewText     ViewKind = "text"     // Text
	ViewTable    ViewKind = "table"    // Columns and Rows
	ViewList     ViewKind = "list"     // Items
	ViewKeyValue ViewKind = "keyValue" // Pairs
	ViewStack    ViewKind = "stack"    // Views, one under another
)

// View is something shown to the person: text, a table, a list, key-value
// pairs, or a stack of views. Every View folds to plain text (Fold), which is
// what --print and text-only channels show.
type View struct {
	Kind    ViewKind   `json:"kind" jsonschema:"enum=text,enum=table,enum=list,enum=keyValue,enum=stack"`
	Title   string     `json:"title,omitempty"`
	Text    string     `json:"text,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
	Items   []string   `json:"items,omitempty"`
	Pairs   []KeyValue `json:"pairs,omitempty"`
	Views   []View     `json:"views,omitempty"`
}

// KeyValue is one row of a key-value View.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Fold renders v as plain text: no colour, no box drawing, aligned columns.
// It always ends without a trailing newline.
func (v View) Fold() string {
	var b strings.Builder
	v.fold(&b)
	return strings.TrimRight(b.String(), "\n")
}

func (v View) fold(b *strings.Builder) {
	if v.Title != "" {
		b.WriteString(v.Title)
		b.WriteString("\n")
	}
	switch v.Kind {
	case ViewTable:
		foldRows(b, append([][]string{v.Columns}, v.Rows...), "  ")
	case ViewList:
		for _, it := range v.Items {
			b.WriteString("- ")
			b.WriteString(it)
			b.WriteString("\n")
		}
	case ViewKeyValue:
		rows := make([][]string, len(v.Pairs))
		for i, p := range v.Pairs {
			rows[i] = []string{p.Key + ":", p.Value}
		}
		foldRows(b, rows, " ")
	case ViewStack:
		for i, sub := range v.Views {
			if i > 0 {
				b.WriteString("\n")
			}
			sub.fold(b)
		}
	default: // ViewText, and any kind this version does not know: its text is the best fold.
		if v.Text != "" {
			b.WriteString(v.Text)
			b.WriteString("\n")
		}
	}
}

// ColumnWidths returns the display width of each column of rows.
func ColumnWidths(rows [][]string) []int {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	return w
}

func foldRows(b *strings.Builder, rows [][]string, gap string) {
	w := ColumnWidths(rows)
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString(gap)
			}
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
}
