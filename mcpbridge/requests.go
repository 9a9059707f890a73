package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The server's own requests: sampling (a model request) and the resources
// contributor; elicitation is in elicit.go.

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
