package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ReadResultTool is the host's tool that reads a cut tool result in parts.
// It is offered once a result of the conversation was cut.
const ReadResultTool = "bingo__read_result"

var readResultSpec = sdk.ToolSpec{Name: ReadResultTool,
	Description: "Reads more of a tool result that bingo cut because it was too long: the part of the whole result that starts at offset (a byte offset; the cut result says where to go on from).",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id the cut result names"},"offset":{"type":"integer","minimum":0,"description":"the byte offset to read from"}},"required":["id","offset"]}`)}

// A span is a tool result's text in the conversation that is part of a
// result kept whole in a file: bytes from to from+len(text) of whole.
// The agent remembers the span of every message content it made (by that
// content), so that cutting one again points at the same file and offset
// instead of keeping a copy of a copy.
type span struct {
	id          string
	from, whole int
	text        int // the length of the part of the content that is the result's
}

// budgetResult returns what the model is sent of a tool result of the
// named tool: content itself when it is within turn.toolResultMax bytes,
// else content cut to that (cut). a.mu is held.
func (a *Agent) budgetResult(tool, content string) string {
	if len(content) <= a.cfg.Turn.ToolResultMax {
		return content
	}
	return a.cut(tool, content, a.cfg.Turn.ToolResultMax, "bingo", "turn.toolResultMax")
}

// cut returns content's start of at most n bytes (on a character
// boundary) and a marker, by who, saying how much was left out, where the
// whole is kept and how to read on. The whole is written to a file of its
// own under Config.ResultsDir, which a notice names for the person, saying
// why it was cut; content that is already part of a kept result (one cut
// before, or a part bingo__read_result read) is cut again in place, its
// marker pointing at the same file. a.mu is held.
func (a *Agent) cut(tool, content string, n int, who, why string) string {
	sp, ok := a.spans[content]
	if !ok {
		id, err := a.keep(content)
		if err != nil {
			head := cutAt(content, n)
			a.notice("warn", "the result of %s (%d bytes) was cut to %d bytes for the model (%s), and could not be kept whole: %v", tool, len(content), len(head), why, err)
			return head + fmt.Sprintf("\n\n[%s cut this tool result: the first %d of its %d bytes are above; the rest could not be kept.]", who, len(head), len(content))
		}
		sp = span{id: id, whole: len(content), text: len(content)}
	}
	head := cutAt(content[:sp.text], n)
	path := a.results[sp.id]
	a.notice("info", "the result of %s (%d bytes) was cut to %d bytes for the model (%s); the whole is in %s", tool, sp.whole, len(head), why, path)
	return a.marked(head, span{id: sp.id, from: sp.from, whole: sp.whole, text: len(head)}, who+" cut this tool result")
}

// keep writes a result whole to a file of its own and returns its id.
func (a *Agent) keep(content string) (string, error) {
	a.cutResults++
	id := fmt.Sprintf("%s-%d", a.cfg.Session, a.cutResults)
	path := filepath.Join(a.cfg.ResultsDir, id+".txt")
	err := a.holdSession()
	if err == nil {
		err = os.WriteFile(path, []byte(content), 0o600)
	}
	if err != nil {
		return "", err
	}
	if a.results == nil {
		a.results = map[string]string{}
	}
	a.results[id] = path
	return id, nil
}

// marked returns text, the part sp of a kept result, followed by its
// marker line, and remembers the content's span.
func (a *Agent) marked(text string, sp span, what string) string {
	content := text + markerLine(what, a.results[sp.id], sp)
	if a.spans == nil {
		a.spans = map[string]span{}
	}
	a.spans[content] = sp
	return content
}

// forgetSpans forgets the spans of contents the conversation no longer
// holds (compacted away, or cut again), so they are not kept alive.
func (a *Agent) forgetSpans() {
	held := map[string]span{}
	for _, m := range a.conv {
		if sp, ok := a.spans[m.Content]; ok && m.Role == sdk.RoleTool {
			held[m.Content] = sp
		}
	}
	a.spans = held
}

// markerLine says, after the part sp of a kept result, what it is (what),
// which bytes are above, where the whole is and how to read on.
func markerLine(what, path string, sp span) string {
	end := sp.from + sp.text
	var b strings.Builder
	if sp.from == 0 {
		fmt.Fprintf(&b, "\n\n[%s: the first %d of its %d bytes are above, %d bytes were left out.", what, end, sp.whole, sp.whole-end)
	} else {
		fmt.Fprintf(&b, "\n\n[%s: bytes %d to %d of its %d are above.", what, sp.from, end, sp.whole)
	}
	fmt.Fprintf(&b, " The whole result is in the file %s", path)
	if end < sp.whole {
		fmt.Fprintf(&b, "; read on with %s {\"id\": %q, \"offset\": %d}", ReadResultTool, sp.id, end)
	}
	b.WriteString(".]")
	return b.String()
}

// markerRoom is at most how many bytes the built-in compaction's marker
// line adds to a result's text: the longest numbers, id and path.
func (a *Agent) markerRoom() int {
	id := a.cfg.Session + "-0000000000"
	big := span{id: id, from: 1 << 61, whole: 1 << 62, text: 1}
	return len(markerLine("bingo's built-in compaction cut this tool result", filepath.Join(a.cfg.ResultsDir, id+".txt"), big)) +
		len("the first  of its  bytes are above, ")
}

// readResult answers bingo__read_result: turn.toolResultMax bytes of a
// result this conversation cut, from offset, and where to read on. Only
// the files cut wrote are read, by their id: the model names no path.
// a.mu is held.
func (a *Agent) readResult(input json.RawMessage) (sdk.ToolOutput, error) {
	var in struct {
		ID     string `json:"id"`
		Offset *int   `json:"offset"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Offset == nil || *in.Offset < 0 {
		return sdk.ToolOutput{}, fmt.Errorf("%s: want {\"id\": string, \"offset\": a byte offset of 0 or more}", ReadResultTool)
	}
	path, ok := a.results[in.ID]
	if !ok {
		return sdk.ToolOutput{}, fmt.Errorf("%s: no cut result has the id %q in this conversation", ReadResultTool, in.ID)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		return sdk.ToolOutput{}, fmt.Errorf("%s: %v", ReadResultTool, err)
	}
	from := min(*in.Offset, len(whole))
	for from < len(whole) && !utf8.RuneStart(whole[from]) {
		from++ // a character split by the offset starts the part whole
	}
	part := cutAt(string(whole[from:]), a.cfg.Turn.ToolResultMax)
	text := a.marked(part, span{id: in.ID, from: from, whole: len(whole), text: len(part)}, "part of a tool result")
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(text)}}, nil
}

// cutAt returns the longest start of s of at most n bytes that does not
// split a character.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
