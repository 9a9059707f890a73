package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The server's own requests: elicitation (a question to the person),
// sampling (a model request) and the resources contributor.

// What of an elicitation's text reaches the person (docs/plugins.md): its
// message, in lines and characters, and its fields' names and
// descriptions, on one line. With bingo's own words they stay within
// what the terminal shows of any question (internal/cli).
const (
	elicitLines      = 9
	elicitChars      = 500
	elicitFieldChars = 400
)

// elicit puts the server's question to the person, on the tool call it is
// answering: the call whose ctx the sdk passes on, else the oldest call
// running. With no call running there is no one to ask, and the request
// is refused.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	id, _ := ctx.Value(callKey{}).(string)
	s.mu.Lock()
	if id == "" && len(s.calls) > 0 {
		id = s.calls[0].id
	}
	running := slices.ContainsFunc(s.calls, func(c *call) bool { return c.id == id })
	s.mu.Unlock()
	if !running {
		return nil, errors.New("bingo asks the person only during one of this server's tool calls, and none is running")
	}
	if p.Mode == "url" {
		return nil, errors.New("bingo does not open URLs for an MCP server")
	}
	fields := schemaFields(p.RequestedSchema)
	// The server's words are capped here, under what bingo shows of any
	// question, so that what bingo adds (the fields, how to decline) is
	// never what gets cut.
	question := strings.Join(render.Block(p.Message, elicitLines, elicitChars), "\n")
	switch len(fields) {
	case 0:
	case 1:
		question += " (" + render.Brief(fields[0].describe(), elicitFieldChars) + ")"
	default:
		var ds []string
		for _, f := range fields {
			ds = append(ds, f.describe())
		}
		question += " (answer a JSON object: " + render.Brief(strings.Join(ds, "; "), elicitFieldChars) + ")"
	}
	question += " — an empty answer declines"
	raw, _ := json.Marshal(protocol.AskParams{Call: id, Question: question})
	var res protocol.ServiceCallResult
	if err := s.rpc.Call(ctx, protocol.MethodServiceCall, protocol.ServiceCallParams{
		Key: protocol.HostServiceKey, Method: protocol.HostAsk, Params: raw}, &res); err != nil {
		// No one could be asked (--print, no terminal) or the question
		// was withdrawn: the person made no choice, which MCP calls
		// cancel. Why is bingo's to log, not the server's to be told.
		fmt.Fprintf(s.cfg.Log, "mcpbridge: elicitation cancelled: %v\n", err)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	var ans protocol.AskResult
	if err := json.Unmarshal(res.Result, &ans); err != nil {
		return nil, fmt.Errorf("asking the person: %v", err)
	}
	answer := strings.TrimSpace(ans.Answer)
	if answer == "" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content, err := elicitContent(fields, answer)
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: elicitation declined: %v\n", err)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// field is one property of an elicitation's requested schema.
type field struct {
	name, typ, description string
}

func (f field) describe() string {
	s := f.name
	if f.typ != "" {
		s += ", " + f.typ
	}
	if f.description != "" {
		s += ": " + f.description
	}
	return s
}

// schemaFields reads the flat object schema an elicitation requests.
func schemaFields(schema any) []field {
	var sch struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(rawJSON(schema), &sch) != nil {
		return nil
	}
	var fs []field
	for name, p := range sch.Properties {
		fs = append(fs, field{name: name, typ: p.Type, description: p.Description})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].name < fs[j].name })
	return fs
}

// elicitContent is the person's answer as the content the schema asks
// for: the one field's value (as its type), or a JSON object for several.
func elicitContent(fields []field, answer string) (map[string]any, error) {
	switch len(fields) {
	case 0:
		return nil, nil
	case 1:
		v, err := typed(fields[0].typ, answer)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", fields[0].name, err)
		}
		return map[string]any{fields[0].name: v}, nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(answer), &obj); err != nil {
		return nil, fmt.Errorf("the answer is not a JSON object: %v", err)
	}
	return obj, nil
}

// typed reads an answer as a value of a JSON Schema primitive type.
func typed(typ, answer string) (any, error) {
	switch typ {
	case "boolean":
		switch strings.ToLower(answer) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", answer)
	case "number":
		return strconv.ParseFloat(answer, 64)
	case "integer":
		return strconv.ParseInt(answer, 10, 64)
	}
	return answer, nil
}

// sample routes the server's model request to the host's provider; it is
// only registered when the person allowed sampling for this server.
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := req.Params
	sr := SampleRequest{System: p.SystemPrompt, MaxTokens: int(p.MaxTokens)}
	for _, m := range p.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		role := sdk.RoleUser
		if m.Role == "assistant" {
			role = sdk.RoleAssistant
		}
		sr.Messages = append(sr.Messages, sdk.Message{Role: role, Content: contentText(m.Content)})
	}
	res, err := s.cfg.Sample(ctx, sr)
	if err != nil {
		return nil, err
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: res.Model, Content: &mcp.TextContent{Text: res.Text}}, nil
}

// Limits of the contributors: a context piece is for the model's next
// request, so a server offering thousands of resources gives only a few,
// and each piece (a resource, the instructions) is bounded.
const (
	maxResources = 16
	maxPieceText = 16 << 10 // characters
)

// cutRunes is s cut to at most n characters (the unit of a query's budget).
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// contribute offers the server's instructions, or its text resources, as
// context pieces.
func (s *server) contribute(ctx context.Context, cs *mcp.ClientSession, p protocol.ContextContributeParams) (any, error) {
	if text := cs.InitializeResult().Instructions; p.ID == InstructionsID && text != "" {
		text = cutRunes(text, maxPieceText)
		if p.Query.Budget > 0 {
			text = cutRunes(text, p.Query.Budget)
		}
		return protocol.ContextContributeResult{Pieces: []sdk.Piece{{Title: "MCP server instructions", Text: text}}}, nil
	}
	if p.ID != ContributorID || !s.cfg.Resources {
		return nil, fmt.Errorf("no contributor %q", p.ID)
	}
	res := protocol.ContextContributeResult{Pieces: []sdk.Piece{}}
	budget := p.Query.Budget
	// Only the first maxResources are offered, as documented: what is
	// left out needs no line in the log on every turn.
	resources, _, err := listAll("resources/list", maxResources, func(cursor string) ([]*mcp.Resource, string, error) {
		r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
	if gone := s.gone(err); gone != nil {
		return nil, gone
	}
	if err != nil {
		return nil, fmt.Errorf("MCP %v", err)
	}
	for _, r := range resources {
		got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		if ctx.Err() != nil {
			// Past the deadline (or the instance is ending): the rest
			// would be read for no one.
			return nil, fmt.Errorf("MCP resources/read %s: %w", r.URI, ctx.Err())
		}
		if err != nil {
			fmt.Fprintf(s.cfg.Log, "mcpbridge: resources/read %s: %v\n", r.URI, err)
			continue
		}
		for _, c := range got.Contents {
			if c == nil || c.Blob != nil || c.Text == "" {
				continue
			}
			text := cutRunes(c.Text, maxPieceText)
			if budget > 0 {
				text = cutRunes(text, budget)
				budget -= utf8.RuneCountInString(text)
			}
			title := r.Name
			if r.Title != "" {
				title = r.Title
			}
			res.Pieces = append(res.Pieces, sdk.Piece{Title: title + " (" + c.URI + ")", Text: text})
			if p.Query.Budget > 0 && budget <= 0 {
				return res, nil
			}
		}
	}
	return res, nil
}
