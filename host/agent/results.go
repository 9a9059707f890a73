package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ReadResultTool is the host's tool that reads a cut tool result in parts.
// It is offered once a result of the conversation was cut.
const ReadResultTool = "bingo__read_result"

var readResultSpec = sdk.ToolSpec{Name: ReadResultTool,
	Description: "Reads more of a tool result that bingo cut because it was too long: the part of the whole result that starts at offset (a byte offset; the cut result says where to go on from).",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id the cut result names"},"offset":{"type":"integer","minimum":0,"description":"the byte offset to read from"}},"required":["id","offset"]}`)}

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
// whole is kept and how to read it in parts. The whole is written to a
// file of its own under Config.ResultsDir, which a notice names for the
// person, saying why it was cut. a.mu is held.
func (a *Agent) cut(tool, content string, n int, who, why string) string {
	head := cutAt(content, n)
	a.cutResults++
	id := fmt.Sprintf("%s-%d", a.cfg.Session, a.cutResults)
	path := filepath.Join(a.cfg.ResultsDir, id+".txt")
	err := os.MkdirAll(a.cfg.ResultsDir, 0o700)
	if err == nil {
		err = os.WriteFile(path, []byte(content), 0o600)
	}
	if err != nil {
		a.notice("warn", "the result of %s (%d bytes) was cut to %d bytes for the model (%s), and could not be kept whole: %v", tool, len(content), len(head), why, err)
		return head + fmt.Sprintf("\n\n[%s cut this tool result: the first %d of its %d bytes are above; the rest could not be kept.]", who, len(head), len(content))
	}
	if a.results == nil {
		a.results = map[string]string{}
	}
	a.results[id] = path
	a.notice("info", "the result of %s (%d bytes) was cut to %d bytes for the model (%s); the whole is in %s", tool, len(content), len(head), why, path)
	return head + cutMarker(who, id, path, len(head), len(content))
}

// cutMarker is the line, by who, after a cut result's start: what is
// missing, and how the model reads on.
func cutMarker(who, id, path string, kept, whole int) string {
	return fmt.Sprintf("\n\n[%s cut this tool result: the first %d of its %d bytes are above, %d bytes were left out. The whole result is in the file %s; read on with %s {\"id\": %q, \"offset\": %d}.]",
		who, kept, whole, whole-kept, path, ReadResultTool, id, kept)
}

// markerRoom is at most how many bytes cut adds to a result's start: a
// marker's text, the numbers in it, and the file's path and id.
func (a *Agent) markerRoom() int {
	return len(cutMarker("bingo's built-in compaction", a.cfg.Session+"-0000000000", a.cfg.ResultsDir+"/"+a.cfg.Session+"-0000000000.txt", 1<<61, 1<<62))
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

// readResult answers bingo__read_result: turn.toolResultMax bytes of a
// result this conversation cut, from offset, and where to read on. Only
// the files budgetResult wrote are read, by their id: the model names no
// path. a.mu is held.
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
	end := from + len(part)
	text := part + fmt.Sprintf("\n\n[bytes %d to %d of %d", from, end, len(whole))
	if end < len(whole) {
		text += "; read on with offset " + strconv.Itoa(end)
	}
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(text + ".]")}}, nil
}
