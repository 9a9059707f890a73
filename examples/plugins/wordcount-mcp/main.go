package main

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// styles are the summary styles the prompt's style argument completes to.
var styles = []string{"brief", "bullets", "detailed"}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wordcount-mcp", Version: "0.1.0"}, &mcp.ServerOptions{
		CompletionHandler: complete,
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "count",
		Description: "Count the lines, words and characters of a text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Word count"},
	}, count)
	s.AddPrompt(&mcp.Prompt{
		Name:        "summarize",
		Description: "Ask for a summary of a topic in a given style.",
		Arguments: []*mcp.PromptArgument{
			{Name: "style", Description: "brief, bullets or detailed", Required: true},
			{Name: "topic", Description: "what to summarize", Required: true},
		},
	}, summarize)
	s.AddResource(&mcp.Resource{URI: "wordcount://about", Name: "about", MIMEType: "text/plain"}, about)
	return s
}

// countInput is the count tool's input.
type countInput struct {
	Text string `json:"text" jsonschema:"the text to count"`
}

// counts is the count tool's structured output.
type counts struct {
	Lines  int `json:"lines"`
	Words  int `json:"words"`
	Chars  int `json:"chars"`
	Unique int `json:"unique,omitempty"`
}

func count(ctx context.Context, req *mcp.CallToolRequest, in countInput) (*mcp.CallToolResult, any, error) {
	if in.Text == "" {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nothing to count: the text is empty"}}}, nil, nil
	}
	lines := strings.SplitAfter(in.Text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var c counts
	seen := map[string]bool{}
	token := req.Params.GetProgressToken()
	for i, line := range lines {
		c.Lines++
		for _, w := range strings.Fields(line) {
			c.Words++
			seen[strings.ToLower(w)] = true
		}
		c.Chars += len([]rune(line))
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(i + 1), Total: float64(len(lines)), Message: fmt.Sprintf("line %d of %d", i+1, len(lines))})
		}
	}
	if config(req).Unique {
		c.Unique = len(seen)
	}
	_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "count", Data: fmt.Sprintf("counted %d words", c.Words)})
	text := fmt.Sprintf("%d lines, %d words, %d characters", c.Lines, c.Words, c.Chars)
	if c.Unique > 0 {
		text += fmt.Sprintf(", %d distinct words", c.Unique)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, c, nil
}

// settings is what this server reads from the person's plugins.<name>.
type settings struct {
	Unique bool `json:"unique"`
}

// config reads the settings bingo passes in the client's experimental
// "bingo" capability, or failing that in BINGO_PLUGIN_CONFIG (exec only).
func config(req *mcp.CallToolRequest) settings {
	var s settings
	raw := []byte(os.Getenv("BINGO_PLUGIN_CONFIG"))
	if caps := req.ClientCapabilities(); caps != nil {
		if b, ok := caps.Experimental["bingo"].(map[string]any); ok {
			raw, _ = json.Marshal(b["config"])
		}
	}
	_ = json.Unmarshal(raw, &s)
	return s
}

func summarize(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	a := req.Params.Arguments
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
		Content: &mcp.TextContent{Text: fmt.Sprintf("Summarize %s in a %s style.", a["topic"], a["style"])}}}}, nil
}

func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	p := req.Params
	if p.Ref == nil || p.Ref.Type != "ref/prompt" || p.Ref.Name != "summarize" || p.Argument.Name != "style" {
		return res, nil
	}
	for _, s := range styles {
		if strings.HasPrefix(s, p.Argument.Value) {
			res.Completion.Values = append(res.Completion.Values, s)
		}
	}
	return res, nil
}

func about(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
		Text: "wordcount-mcp counts lines, words and characters; it is an MCP server run by bingo."}}}, nil
}
