// Package mcpfault is an MCP server, written with the official go-sdk, that
// exercises every row of package mcpbridge's mapping and misbehaves on
// purpose, tool by tool. The mcpbridge tests serve it in process (over
// transport/mem); the black-box tests run cmd/mcpfault as an exec plugin.
//
// Tools: echo (text back), contents (one block of every content kind, and
// structured content), fail (isError), progress (progress without
// messages), annotated (annotations that claim everything), dotted.name (a
// name the host cannot offer as it is), hang (answers only when cancelled,
// logging that it was), deaf (never answers its call, though it answers
// anything else), freeze (stops the whole server), junk (prints lines
// that are no message on stdout, then answers), hangup (closes stdout and
// goes on running), crash (the server exits mid-call), flood (n log
// lines at error level, each size bytes), change (adds the tool added:
// tools/list_changed), ask (elicits a name, with message as its question
// if given), form (elicits a form of every kind of field), outside (sends
// an elicitation of its own while its call runs, which is part of no
// call), sample (asks the client's model), config (the config the client
// passed), roots (whether the client declares roots, and the roots it
// lists), configenv (the config in
// the environment). Prompt greet(name, mood),
// mood completing to happy/hungry/sad. Resources: two text ones and a
// blob.
package mcpfault

//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Process is what the server does to the process it runs in.
type Process struct {
	// Exit ends it (os.Exit in cmd/mcpfault), for the crash tool.
	Exit func(code int)
	// Freeze stops it reading and answering anything, for the freeze
	// tool; nil offers no freeze tool.
	Freeze func()
	// Done is closed when the server ends (nil in cmd/mcpfault: a process
	// just ends), for the deaf tool.
	Done <-chan struct{}
	// Print writes a line to the server's stdout beside the protocol, as
	// a stray print does, for the junk tool.
	Print func(line string)
	// Hangup closes the server's stdout and leaves it running, for the
	// hangup tool; nil offers no hangup tool.
	Hangup func()
	// Sideband sends requests beside the sdk's session, for the outside
	// tool; nil offers no outside tool.
	Sideband *Sideband
}

// New returns the server.
func New(proc Process) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfault-server", Version: "9.9.9"}, &mcp.ServerOptions{
		CompletionHandler: complete,
	})
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	obj := map[string]any{"type": "object"}
	add := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: obj}, h)
	}
	add("echo", "Say the text back.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return text(in.Text), nil
	})
	add("contents", "One block of every kind.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				&mcp.TextContent{Text: "plain"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("123")},
				&mcp.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain", Description: "the a file"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "embedded text"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: []byte("xy")}},
			},
			StructuredContent: map[string]any{"n": 3, "s": "three"},
		}, nil
	})
	add("fail", "Fail as a tool does.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
	})
	add("progress", "Report progress without messages.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 2; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2})
			}
		}
		return text("done"), nil
	})
	s.AddTool(&mcp.Tool{Name: "annotated", Description: "Claims everything.", InputSchema: obj,
		Annotations: &mcp.ToolAnnotations{Title: "Safe", ReadOnlyHint: true, DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	add("dotted.name", "A name with a dot.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("dotted"), nil
	})
	add("hang", "Answer only when cancelled.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		_ = req.Session.Log(context.WithoutCancel(ctx), &mcp.LoggingMessageParams{Level: "info", Logger: "hang", Data: "hang cancelled"})
		return nil, ctx.Err()
	})
	add("deaf", "Never answer, even when cancelled.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-proc.Done
		return nil, errors.New("ended")
	})
	if proc.Freeze != nil {
		add("freeze", "Stop reading and answering anything.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			proc.Freeze()
			return text("thawed"), nil
		})
	}
	add("junk", "Print lines that are no JSON-RPC message, then answer.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, l := range []string{"THIS IS NOT JSON", `{"not": "a message"}`, `[1, 2]`} {
			proc.Print(l)
		}
		return text("printed junk"), nil
	})
	if proc.Hangup != nil {
		add("hangup", "Close stdout and go on running.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			proc.Hangup()
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	add("crash", "Exit mid-call.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		proc.Exit(3)
		// exit ended the process; in process, the session ends, and
		// with it this call.
		<-ctx.Done()
		return nil, ctx.Err()
	})
	add("flood", "Log n lines at error level, each size bytes (or text, if given).", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			N, Size int
			Text    string
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		line := cmp.Or(in.Text, strings.Repeat("x", max(in.Size, 1)))
		for i := range in.N {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "flood", Data: fmt.Sprintf("%d %s", i, line)})
		}
		return text(fmt.Sprintf("logged %d", in.N)), nil
	})
	add("change", "Add the tool added.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "added", Description: "Added by change.", InputSchema: obj},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("added ran"), nil
			})
		return text("changed"), nil
	})
	add("ask", "Ask the person's name, in message if given.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
			if r.Action != "accept" {
				return text("ask: " + r.Action), nil
			}
			return text(fmt.Sprintf("hello %v", r.Content["name"])), nil
		}
		var in struct{ Message string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
			Message: cmp.Or(in.Message, "What is your name?"),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "your name"}}},
		}}}, nil
	})
	add("form", "Ask the person to fill in a form of every kind of field.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["form"].(*mcp.ElicitResult); ok {
			content, _ := json.Marshal(r.Content)
			return text(fmt.Sprintf("form: %s %s", r.Action, content)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"form": &mcp.ElicitParams{
			Message: "Order a shirt.", RequestedSchema: map[string]any{
				"type": "object", "required": []any{"size", "count"}, "properties": map[string]any{
					"colour": map[string]any{"type": "string", "enum": []any{"red", "green", "blue"}, "default": "green"},
					"size": map[string]any{"type": "string", "oneOf": []any{
						map[string]any{"const": "s", "title": "Small"}, map[string]any{"const": "l", "title": "Large"}}},
					"count": map[string]any{"type": "integer", "minimum": 1, "description": "how many"},
					"gift":  map[string]any{"type": "boolean", "default": false},
				}},
		}}}, nil
	})
	if proc.Sideband != nil {
		add("outside", "Ask the person's name in a request of its own, which is part of no call.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			answer, err := proc.Sideband.Request(ctx, "elicitation/create", &mcp.ElicitParams{Message: "Outside: what is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return text("outside: " + string(answer)), nil
		})
	}
	add("sample", "Ask the client's model, in at most maxTokens tokens (50 if not given), n times at once (once if not given).", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if len(req.Params.InputResponses) > 1 {
			return text(fmt.Sprintf("the model answered %d times", len(req.Params.InputResponses))), nil
		}
		if r, ok := req.Params.InputResponses["model"].(*mcp.CreateMessageWithToolsResult); ok {
			var parts []string
			for _, c := range r.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					parts = append(parts, t.Text)
				}
			}
			return text(fmt.Sprintf("model said: %s (model %s)", strings.Join(parts, ""), r.Model)), nil
		}
		var in struct {
			MaxTokens int64
			N         int
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		asks := mcp.InputRequestMap{}
		for i := range max(in.N, 1) {
			key := "model"
			if i > 0 {
				key = fmt.Sprintf("model%d", i)
			}
			asks[key] = &mcp.CreateMessageParams{
				SystemPrompt: "be brief", MaxTokens: cmp.Or(in.MaxTokens, 50),
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
			}
		}
		return &mcp.CallToolResult{InputRequests: asks}, nil
	})
	add("roots", "Say whether the client declares roots, and the roots it lists.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
		}
		caps := req.ClientCapabilities()
		out := fmt.Sprintf("capability %v;", caps != nil && caps.RootsV2 != nil)
		for _, root := range r.Roots {
			out += fmt.Sprintf(" %s (%s)", root.URI, root.Name)
		}
		return text(out), nil
	})
	add("configenv", "Say BINGO_PLUGIN_CONFIG from the environment.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("env=" + os.Getenv("BINGO_PLUGIN_CONFIG")), nil
	})
	add("config", "Say the config the client passed.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// "absent" tells no config from a null one, which the 2026-07-28
		// schema forbids a client to send.
		cfg, set := any(nil), false
		if caps := req.ClientCapabilities(); caps != nil {
			if b, ok := caps.Experimental["bingo"].(map[string]any); ok {
				cfg, set = b["config"]
			}
		}
		if !set {
			return text("absent"), nil
		}
		raw, _ := json.Marshal(cfg)
		return text(string(raw)), nil
	})

	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{
		{Name: "name", Required: true}, {Name: "mood"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s (%s).", a["name"], a["mood"])}},
			{Role: "assistant", Content: &mcp.TextContent{Text: "Sure."}},
		}}, nil
	})
	for _, r := range []struct{ uri, name, text string }{
		{"mem://one", "one", "the first resource"},
		{"mem://two", "two", "the second resource"},
	} {
		s.AddResource(&mcp.Resource{URI: r.uri, Name: r.name, MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.uri, MIMEType: "text/plain", Text: r.text}}}, nil
			})
	}
	s.AddResource(&mcp.Resource{URI: "mem://blob", Name: "blob", MIMEType: "application/octet-stream"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://blob", Blob: []byte{1, 2}}}}, nil
		})
	return s
}

func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if req.Params.Argument.Name != "mood" {
		return res, nil
	}
	for _, m := range []string{"happy", "hungry", "sad"} {
		if strings.HasPrefix(m, req.Params.Argument.Value) {
			res.Completion.Values = append(res.Completion.Values, m)
		}
	}
	return res, nil
}
