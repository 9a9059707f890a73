package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// names maps the names the declaration gives to what the server calls
// them: a name the host can offer holds only letters, digits, '_' and '-',
// and an MCP name may hold '.' and '/' too.
type names struct {
	tools   map[string]string      // declared tool name → MCP tool name
	prompts map[string]*mcp.Prompt // declared command name → MCP prompt
}

// ContributorID is the id of the context contributor offering the
// server's resources, when the person enabled it.
const ContributorID = "resources"

// InstructionsID is the id of the context contributor offering the
// instructions the server gave at initialize, when it gave any: how to use
// its tools is for the model, as their descriptions are.
const InstructionsID = "instructions"

// declaration reads what the server offers (tools, prompts, and
// resources when enabled) and makes it a bingo declaration. The bridge
// holds it to the same rules as any plugin's, entry by entry.
func (s *server) declaration(cs *mcp.ClientSession) (protocol.InitializeResult, error) {
	init := cs.InitializeResult()
	caps := init.Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	decl := protocol.InitializeResult{Protocol: protocol.Version, Name: s.cfg.Name, Version: s.cfg.Version}
	if init.ServerInfo != nil && init.ServerInfo.Version != "" {
		decl.Version = init.ServerInfo.Version
	}
	n := names{tools: map[string]string{}, prompts: map[string]*mcp.Prompt{}}
	if caps.Tools != nil {
		tools, cut, err := listAll("tools/list", maxListed, func(cursor string) ([]*mcp.Tool, string, error) {
			r, err := cs.ListTools(s.ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Tools, r.NextCursor, nil
		})
		if err != nil {
			return decl, err
		}
		s.leftOut("tools/list", cut)
		var withheld []string
		for _, t := range tools {
			if s.tasksOnly(t.Name) {
				withheld = append(withheld, t.Name)
				continue
			}
			name := hostName(t.Name)
			n.tools[name] = t.Name
			decl.Tools = append(decl.Tools, sdk.ToolSpec{Name: name, Description: t.Description, InputSchema: rawJSON(t.InputSchema), Claims: claims(t.Annotations)})
		}
		s.withhold(withheld)
	}
	if caps.Prompts != nil {
		prompts, cut, err := listAll("prompts/list", maxListed, func(cursor string) ([]*mcp.Prompt, string, error) {
			r, err := cs.ListPrompts(s.ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Prompts, r.NextCursor, nil
		})
		if err != nil {
			return decl, err
		}
		s.leftOut("prompts/list", cut)
		for _, p := range prompts {
			name := hostName(p.Name)
			n.prompts[name] = p
			decl.Commands = append(decl.Commands, promptSpec(name, p))
		}
	}
	if init.Instructions != "" {
		decl.Contributors = append(decl.Contributors, protocol.ContributorDecl{ID: InstructionsID, Description: "the MCP server's instructions"})
	}
	if s.cfg.Resources && caps.Resources != nil {
		decl.Contributors = append(decl.Contributors, protocol.ContributorDecl{ID: ContributorID, Description: "the MCP server's resources"})
	}
	s.mu.Lock()
	s.names = n
	s.mu.Unlock()
	return decl, nil
}

// A tool whose execution.taskSupport is "required" may only be run as a
// task (protocol 2025-11-25), which neither the sdk's client (v1.8.0 has no
// tasks) nor bingo does: a plain tools/call of it always fails (-32601).
// It is not offered to the model, and the person is told once a process.
// The sdk's Tool drops the field, so it is read off the wire (toolsListed).

// toolsListed notes, from the raw result of a tools/list page, which tools
// require tasks. It runs on the reader, before the sdk hands the page to
// ListTools.
func (s *server) toolsListed(result json.RawMessage) {
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range page.Tools {
		if t.Execution != nil && t.Execution.TaskSupport == "required" {
			s.taskTools[t.Name] = true
		} else {
			delete(s.taskTools, t.Name)
		}
	}
}

// tasksOnly reports whether the server said tool requires tasks.
func (s *server) tasksOnly(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taskTools[tool]
}

// withhold says which tools the declaration leaves out for requiring
// tasks: in the log each time, and once a process in a notice, before
// the declaration is sent (so that bingo plugins check, which reports
// the notices of a start, reports it).
func (s *server) withhold(tools []string) {
	if len(tools) == 0 {
		return
	}
	msg := fmt.Sprintf("not offering the MCP server's %s %s: %s run only as tasks (execution.taskSupport \"required\"), which bingo does not run",
		map[bool]string{true: "tool", false: "tools"}[len(tools) == 1], strings.Join(tools, ", "), map[bool]string{true: "it can be", false: "they can be"}[len(tools) == 1])
	fmt.Fprintf(s.cfg.Log, "mcpbridge: %s\n", msg)
	var fresh bool
	for _, t := range tools {
		if _, told := s.told.LoadOrStore(t, true); !told {
			fresh = true
		}
	}
	if fresh {
		s.say("warn", msg)
	}
}

// Bounds on one list a declaration reads: a server's pages are read
// until it gives no next cursor, and a server that always gives one would
// otherwise be listed, and held, until the instance ends (a re-list after
// list_changed has no deadline).
const (
	maxListed = 1000 // tools, and prompts, declared
	maxPages  = 100  // pages read of one list
)

// listAll reads every page of one list, up to max entries in at most
// maxPages pages (the sdk's iterators, ClientSession.Tools, .Prompts and
// .Resources, follow the cursor without end). cut says what was left out,
// if anything.
func listAll[T any](method string, max int, page func(cursor string) ([]*T, string, error)) (all []*T, cut string, err error) {
	cursor := ""
	for range maxPages {
		items, next, err := page(cursor)
		if err != nil {
			return nil, "", fmt.Errorf("%s failed: %w", method, err)
		}
		all = append(all, items...)
		switch {
		case len(all) > max || len(all) == max && next != "":
			return all[:max], fmt.Sprintf("the server offers more than %d", max), nil
		case next == "":
			return all, "", nil
		}
		cursor = next
	}
	return all, fmt.Sprintf("the server gave more than %d pages", maxPages), nil
}

// leftOut says in the plugin's log what a list left out.
func (s *server) leftOut(method, cut string) {
	if cut != "" {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: %s: %s; the rest are left out\n", method, cut)
	}
}

// hostName is an MCP name as the host can offer it: every character other
// than a letter, a digit, '_' or '-' becomes '_'. Two names that meet are
// both declared, and the host keeps the first.
func hostName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// claims says in words what the tool's annotations claim. The host never
// believes them (the tool wears the untrusted default traits) but shows
// them to the person it asks whether to run a call.
func claims(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var cs []string
	if a.Title != "" {
		cs = append(cs, "title "+strconv.Quote(a.Title))
	}
	if a.ReadOnlyHint {
		cs = append(cs, "read-only")
	}
	if a.DestructiveHint != nil {
		cs = append(cs, map[bool]string{true: "destructive", false: "not destructive"}[*a.DestructiveHint])
	}
	if a.IdempotentHint {
		cs = append(cs, "idempotent")
	}
	if a.OpenWorldHint != nil {
		cs = append(cs, map[bool]string{true: "open-world", false: "closed-world"}[*a.OpenWorldHint])
	}
	return strings.Join(cs, ", ")
}

// callTool runs one tool call on the server.
func (s *server) callTool(cs *mcp.ClientSession, p protocol.ToolCallParams) (any, error) {
	s.mu.Lock()
	mcpName, ok := s.names.tools[p.Name]
	if !ok {
		s.mu.Unlock()
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "no tool " + strconv.Quote(p.Name)}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c := &call{id: p.CallID, tool: mcpName, cancel: cancel}
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.calls = slices.DeleteFunc(s.calls, func(x *call) bool { return x == c })
		s.mu.Unlock()
	}()

	params := &mcp.CallToolParams{Name: mcpName, Arguments: argsOf(p.Input), Meta: logMeta()}
	params.SetProgressToken(p.CallID)
	res, err := cs.CallTool(context.WithValue(ctx, callKey{}, p.CallID), params)
	// What the call changed is declared before it answers: the host's
	// next model request sees it.
	s.declared()
	if err != nil {
		s.mu.Lock()
		asked := c.asked
		s.mu.Unlock()
		if asked {
			// The server was told (notifications/cancelled) and answers
			// the call no more. It still proves it answers at all (a
			// ping) before the host gets this answer: an interrupted
			// call's answer within its deadline shows the instance
			// alive, and a server that has stopped answering must not
			// seem so. (Past the deadline the answer shows nothing, and
			// the bridge's probe asks instead.)
			_ = cs.Ping(s.ctx, nil)
			return protocol.ToolCallResult{Output: sdk.ToolOutput{IsError: true,
				Parts: []sdk.Part{sdk.TextPart("cancelled: the MCP server was asked to stop (notifications/cancelled)")}}}, nil
		}
		if gone := s.gone(err); gone != nil {
			return nil, gone
		}
		return nil, fmt.Errorf("MCP tools/call %s: %v", mcpName, err)
	}
	return protocol.ToolCallResult{Output: toolOutput(res)}, nil
}

// logLevel is the least level of the server's logging the plugin's log
// receives.
const logLevel = "info"

// logMeta asks for the server's logging on one request: protocol
// 2026-07-28 sets the level per request; before it, initialize set it for
// the session (logging/setLevel).
func logMeta() mcp.Meta { return mcp.Meta{mcp.MetaKeyLogLevel: logLevel} }

// callKey carries a tool call's id in the ctx of its CallTool, for the
// requests the server makes while answering it.
type callKey struct{}

// argsOf is a tool input as the server's arguments: an empty input is no
// arguments.
func argsOf(input json.RawMessage) any {
	if len(input) == 0 || string(input) == "null" {
		return map[string]any{}
	}
	return input
}

// toolOutput is an MCP tool result as the host's ToolOutput: each content
// block one part (text as it is; what is not text, described), except a
// block meant for the person only (audience ["user"]), which is shown to
// the person and not sent to the model; isError kept, and
// structuredContent shown to the person (and given to the model when
// there is nothing else).
func toolOutput(res *mcp.CallToolResult) sdk.ToolOutput {
	out := sdk.ToolOutput{IsError: res.IsError, Parts: []sdk.Part{}}
	var shown []sdk.View
	for _, c := range res.Content {
		if userOnly(c) {
			shown = append(shown, sdk.View{Kind: sdk.ViewText, Text: contentText(c)})
			continue
		}
		out.Parts = append(out.Parts, sdk.TextPart(contentText(c)))
	}
	if res.StructuredContent != nil {
		raw := rawJSON(res.StructuredContent)
		if len(out.Parts) == 0 {
			out.Parts = append(out.Parts, sdk.TextPart(string(raw)))
		}
		shown = append(shown, *structuredView(raw))
	}
	switch len(shown) {
	case 0:
	case 1:
		out.Display = &shown[0]
	default:
		out.Display = &sdk.View{Kind: sdk.ViewStack, Views: shown}
	}
	return out
}

// userOnly reports whether a content block's audience is the person alone
// (annotations.audience ["user"]): the spec's way for a server to say the
// model should not read it.
func userOnly(c mcp.Content) bool {
	var a *mcp.Annotations
	switch c := c.(type) {
	case *mcp.TextContent:
		a = c.Annotations
	case *mcp.ImageContent:
		a = c.Annotations
	case *mcp.AudioContent:
		a = c.Annotations
	case *mcp.ResourceLink:
		a = c.Annotations
	case *mcp.EmbeddedResource:
		a = c.Annotations
	}
	return a != nil && len(a.Audience) > 0 && !slices.Contains(a.Audience, "assistant")
}

// contentText is one content block as text.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		s += "]"
		if c.Description != "" {
			s += " " + c.Description
		}
		return s
	case *mcp.EmbeddedResource:
		return resourceText(c.Resource)
	}
	return fmt.Sprintf("[%T content]", c)
}

// resourceText is one resource's contents as text: a text resource's text
// under its URI, a blob described.
func resourceText(r *mcp.ResourceContents) string {
	if r == nil {
		return "[resource: empty]"
	}
	if r.Blob != nil {
		return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
	}
	return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// structuredView shows structured content: an object as its keys and
// values, anything else as its JSON.
func structuredView(raw json.RawMessage) *sdk.View {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return &sdk.View{Kind: sdk.ViewText, Title: "structured content", Text: string(raw)}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	v := &sdk.View{Kind: sdk.ViewKeyValue, Title: "structured content"}
	for _, k := range keys {
		val := string(obj[k])
		var str string
		if json.Unmarshal(obj[k], &str) == nil {
			val = str
		}
		v.Pairs = append(v.Pairs, sdk.KeyValue{Key: k, Value: val})
	}
	return v
}

// notified handles the server's notifications that must keep their place
// among its answers.
func (s *server) notified(method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		s.progress(params)
	case "notifications/tools/list_changed", "notifications/prompts/list_changed":
		s.listChanged()
	}
}

// progress turns the server's progress on a tool call into the call's
// live line.
func (s *server) progress(raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	id, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	s.mu.Lock()
	running := slices.ContainsFunc(s.calls, func(c *call) bool { return c.id == id })
	s.mu.Unlock()
	if !running {
		return
	}
	tail := p.Message
	if tail == "" {
		tail = strconv.FormatFloat(p.Progress, 'f', -1, 64)
		if p.Total > 0 {
			tail += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
		}
	}
	_ = s.rpc.Notify(s.ctx, protocol.NotifyToolProgress, protocol.ToolProgress{CallID: id, Tail: tail})
}

// maxLogMessage bounds what one MCP log message writes to the plugin log.
const maxLogMessage = 64 << 10

// oneLine shows a line break as the escape that writes it.
var oneLine = strings.NewReplacer("\r", `\r`, "\n", `\n`)

// logMessage writes the server's log line to the plugin's log. The first
// line at error level or above also raises a notice; the rest are in the
// log only, so a server flooding errors costs one notice.
func (s *server) logMessage(_ context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	data, ok := p.Data.(string)
	if !ok {
		data = string(rawJSON(p.Data))
	}
	who := "mcp"
	if p.Logger != "" {
		who += " " + p.Logger
	}
	logged := data
	if len(logged) > maxLogMessage {
		// The SDK takes a message of up to its 16 MiB frame: a server
		// sending those would fill its log (capped, but with one message)
		// and cost the host a copy of each. The start is what a person
		// reads.
		logged = strings.ToValidUTF8(data[:maxLogMessage], "") // a character cut in two goes
		logged += fmt.Sprintf("… (%d bytes more)", len(data)-len(logged))
	}
	// One message, one line of the log: a newline in it is shown as \n,
	// so the server cannot write a line that reads as bingo's (the log
	// escapes the other control characters).
	fmt.Fprintf(s.cfg.Log, "%s %s: %s\n", oneLine.Replace(who), oneLine.Replace(string(p.Level)), oneLine.Replace(logged))
	switch p.Level {
	case "error", "critical", "alert", "emergency":
	default:
		return
	}
	s.mu.Lock()
	first := !s.errTold
	s.errTold = true
	s.mu.Unlock()
	if first {
		s.notice("error", fmt.Sprintf("the MCP server logged %s: %s (later errors go to its log only)", p.Level, firstLine(data)))
	}
}

// firstLine is s up to its first newline, at most 200 characters (cut
// on a character, never inside one).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if cut := cutRunes(s, 200); cut != s {
		s = cut + "…"
	}
	return s
}
