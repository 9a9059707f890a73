package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// The server's own requests: sampling (a model request) and the resources
// contributor; elicitation is in elicit.go.

// sample routes the server's model request to the host's provider; it is
// only registered when the person allowed sampling for this server. It
// is held to the bounds of Config.Sample: a server allowed to sample
// made 500 provider requests in a second from one tool call, each
// asking 100 000 tokens.
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if err := s.countSample(ctx); err != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: sampling request refused: %v\n", err)
		return nil, fmt.Errorf("sampling request refused: %v", err)
	}
	p := req.Params
	sr := SampleRequest{System: p.SystemPrompt, MaxTokens: int(p.MaxTokens)}
	if sr.MaxTokens <= 0 || sr.MaxTokens > s.cfg.MaxTokens {
		if sr.MaxTokens > s.cfg.MaxTokens {
			fmt.Fprintf(s.cfg.Log, "mcpbridge: sampling request of %d tokens held to %d (mcp.%s.maxTokens)\n", sr.MaxTokens, s.cfg.MaxTokens, s.cfg.Name)
		}
		sr.MaxTokens = s.cfg.MaxTokens
	}
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

// countSample counts a sampling request against the tool call it is
// part of, and refuses it outside any call or past the call's
// Config.MaxSamples; the first refused in a call raises a notice.
func (s *server) countSample(ctx context.Context) error {
	id, err := s.askingCall(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var c *call
	for _, x := range s.calls {
		if x.id == id {
			c = x
		}
	}
	if c == nil {
		s.mu.Unlock()
		return fmt.Errorf("its tool call %s has ended", id)
	}
	c.sampled++
	n, tool := c.sampled, c.tool
	s.mu.Unlock()
	if n <= s.cfg.MaxSamples {
		return nil
	}
	if n == s.cfg.MaxSamples+1 {
		s.notice("warn", fmt.Sprintf("the MCP server asked the model more than %d times (turn.maxSteps) while answering one call of its tool %s: the rest of that call's sampling requests are refused", s.cfg.MaxSamples, render.Line(tool)))
	}
	return fmt.Errorf("one tool call may ask the model at most %d times (turn.maxSteps)", s.cfg.MaxSamples)
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
