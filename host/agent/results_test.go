package agent

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func TestBudgetResultCutsAndKeepsTheWhole(t *testing.T) {
	var notices []string
	a := &Agent{cfg: Config{Turn: settings.Turn{ToolResultMax: 10}, Session: "s", ResultsDir: t.TempDir(),
		Notify: func(n bridge.Notice) { notices = append(notices, n.Message) }}}
	if got := a.budgetResult("t", "0123456789"); got != "0123456789" || len(notices) != 0 {
		t.Fatalf("a result within the bound must go whole: %q %v", got, notices)
	}
	whole := "héllo wörld, and more" // é and ö are two bytes each
	got := a.budgetResult("t", whole)
	if !strings.HasPrefix(got, "héllo wö\n") {
		t.Fatalf("the start must be kept, cut on a character boundary within 10 bytes: %q", got)
	}
	if !strings.Contains(got, "the first 10 of its 23 bytes are above, 13 bytes were left out") || !strings.Contains(got, `bingo__read_result {"id": "s-1", "offset": 10}`) {
		t.Fatalf("the marker must say what was left out and how to read on: %q", got)
	}
	if b, err := os.ReadFile(a.results["s-1"]); err != nil || string(b) != whole {
		t.Fatalf("the whole must be kept: %q %v", b, err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], a.results["s-1"]) {
		t.Fatalf("one notice must name the file: %v", notices)
	}

	read := func(in string) string {
		out, err := a.readResult(json.RawMessage(in))
		if err != nil {
			return "error: " + err.Error()
		}
		return out.Text()
	}
	if got := read(`{"id": "s-1", "offset": 10}`); !strings.HasPrefix(got, "rld, and m\n\n[part of a tool result: bytes 10 to 20 of its 23 are above.") ||
		!strings.HasSuffix(got, `; read on with bingo__read_result {"id": "s-1", "offset": 20}.]`) {
		t.Fatalf("read from 10: %q", got)
	}
	if got := read(`{"id": "s-1", "offset": 2}`); !strings.HasPrefix(got, "llo wörld\n\n[part of a tool result: bytes 3 to 13 of its 23") {
		t.Fatalf("an offset inside a character starts at the next: %q", got)
	}
	if got := read(`{"id": "s-1", "offset": 20}`); !strings.HasPrefix(got, "ore\n\n[part of a tool result: bytes 20 to 23 of its 23 are above.") || strings.Contains(got, "read on") {
		t.Fatalf("the last part: %q", got)
	}

	// Cut again (a compaction), a cut result or a part read points at the
	// same file: no copy of a copy is kept.
	again := a.cut("t", got, 4, "bingo's built-in compaction", "why")
	if !strings.HasPrefix(again, "hél\n\n[bingo's built-in compaction cut this tool result: the first 4 of its 23 bytes are above") ||
		!strings.Contains(again, `{"id": "s-1", "offset": 4}`) || len(a.results) != 1 {
		t.Fatalf("cut again: %q (%d files)", again, len(a.results))
	}
	part := read(`{"id": "s-1", "offset": 10}`)
	again = a.cut("t", part, 3, "bingo's built-in compaction", "why")
	if !strings.HasPrefix(again, "rld\n\n[bingo's built-in compaction cut this tool result: bytes 10 to 13 of its 23 are above") ||
		!strings.Contains(again, `{"id": "s-1", "offset": 13}`) || len(a.results) != 1 {
		t.Fatalf("a part cut again: %q (%d files)", again, len(a.results))
	}
	for in, want := range map[string]string{
		`{"id": "../../etc/passwd", "offset": 0}`: `no cut result has the id "../../etc/passwd"`,
		`{"id": "s-1"}`:               "want {",
		`{"id": "s-1", "offset": -1}`: "want {",
	} {
		if got := read(in); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestBudgetResultSaysWhenItCannotKeep(t *testing.T) {
	var notices []string
	file := t.TempDir() + "/file"
	os.WriteFile(file, nil, 0o600)
	a := &Agent{cfg: Config{Turn: settings.Turn{ToolResultMax: 4}, Session: "s", ResultsDir: file + "/results",
		Notify: func(n bridge.Notice) { notices = append(notices, n.Message) }}}
	got := a.budgetResult("t", "0123456789")
	if !strings.HasPrefix(got, "0123\n\n[bingo cut this tool result: the first 4 of its 10 bytes are above; the rest could not be kept.]") || len(a.results) != 0 {
		t.Fatalf("%q", got)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "could not be kept whole") {
		t.Fatalf("%v", notices)
	}
}

func TestSpansOfCompactedResultsAreForgotten(t *testing.T) {
	a := &Agent{cfg: Config{Turn: settings.Turn{ToolResultMax: 4}, Session: "s", ResultsDir: t.TempDir(), Notify: func(bridge.Notice) {}}}
	kept := a.budgetResult("t", "0123456789")
	gone := a.budgetResult("t", "abcdefghij")
	a.conv = []sdk.Message{{Role: sdk.RoleUser, Content: "x"}, {Role: sdk.RoleTool, ToolCallID: "1", Content: kept}}
	a.forgetSpans()
	if _, ok := a.spans[kept]; !ok || len(a.spans) != 1 {
		t.Fatalf("spans = %v", a.spans)
	}
	if _, ok := a.spans[gone]; ok {
		t.Fatal("a result no longer in the conversation must be forgotten")
	}
}
