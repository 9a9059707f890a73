package mcpbridge

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// promptSpec is an MCP prompt as a slash command. Its arguments are typed
// after the command's name: name=value, or by position in the order the
// prompt lists them, the last taking the rest of the line.
func promptSpec(name string, p *mcp.Prompt) sdk.CommandSpec {
	spec := sdk.CommandSpec{Name: name, Hint: p.Description, Args: sdk.CommandArgs{Kind: sdk.ArgsNone}}
	if spec.Hint == "" {
		spec.Hint = p.Title
	}
	if len(p.Arguments) > 0 {
		var hint []string
		for _, a := range p.Arguments {
			if a.Required {
				hint = append(hint, "<"+a.Name+">")
			} else {
				hint = append(hint, "["+a.Name+"]")
			}
		}
		spec.Args = sdk.CommandArgs{Kind: sdk.ArgsFree, Hint: strings.Join(hint, " ")}
	}
	return spec
}

// promptArgs reads the arguments typed after a prompt's command: each
// word name=value (name one of the prompt's arguments) sets that one; the
// other words fill the arguments not named, in order, the last of them
// taking the rest of the line.
func promptArgs(p *mcp.Prompt, line string) map[string]string {
	args := map[string]string{}
	var rest []string
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok && argIndex(p, k) >= 0 {
			args[k] = v
			continue
		}
		rest = append(rest, w)
	}
	var free []string
	for _, a := range p.Arguments {
		if _, set := args[a.Name]; !set {
			free = append(free, a.Name)
		}
	}
	for i, name := range free {
		if len(rest) == 0 {
			break
		}
		if i == len(free)-1 {
			args[name] = strings.Join(rest, " ")
			break
		}
		args[name], rest = rest[0], rest[1:]
	}
	return args
}

func argIndex(p *mcp.Prompt, name string) int {
	for i, a := range p.Arguments {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// runPrompt gets the prompt and sends its messages to the model as the
// person's turn.
func (s *server) runPrompt(ctx context.Context, cs *mcp.ClientSession, r protocol.CommandRunParams) (any, error) {
	p, err := s.prompt(r.Name)
	if err != nil {
		return nil, err
	}
	args := promptArgs(p, r.Args)
	var missing []string
	for _, a := range p.Arguments {
		if a.Required && args[a.Name] == "" {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return protocol.CommandRunResult{Outcome: sdk.CommandOutcome{Kind: sdk.OutcomeError,
			Message: fmt.Sprintf("missing %s; usage: /%s %s", strings.Join(missing, ", "), r.Name, promptSpec(r.Name, p).Args.Hint)}}, nil
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.Name, Arguments: args, Meta: logMeta()})
	if gone := s.gone(err); gone != nil {
		return nil, gone
	}
	if err != nil {
		return protocol.CommandRunResult{Outcome: sdk.CommandOutcome{Kind: sdk.OutcomeError,
			Message: fmt.Sprintf("MCP prompts/get %s: %v", p.Name, err)}}, nil
	}
	var texts []string
	for _, m := range res.Messages {
		if m != nil && m.Content != nil {
			texts = append(texts, contentText(m.Content))
		}
	}
	return protocol.CommandRunResult{Outcome: sdk.CommandOutcome{Kind: sdk.OutcomePrompt, Prompt: strings.Join(texts, "\n\n")}}, nil
}

// completePrompt asks the server to complete the argument being typed
// (completion/complete), and answers each value as the whole line.
func (s *server) completePrompt(ctx context.Context, cs *mcp.ClientSession, r protocol.CommandCompleteParams) (any, error) {
	p, err := s.prompt(r.Name)
	if err != nil {
		return nil, err
	}
	empty := protocol.CommandCompleteResult{Completions: []sdk.Completion{}}
	if len(p.Arguments) == 0 {
		return empty, nil
	}
	// The word being typed is the last one; the words before it say
	// which argument it is.
	cut := strings.LastIndexAny(r.Partial, " \t") + 1
	before, word := r.Partial[:cut], r.Partial[cut:]
	done := promptArgs(p, before)
	arg, prefix := "", before
	if k, v, ok := strings.Cut(word, "="); ok && argIndex(p, k) >= 0 {
		arg, word, prefix = k, v, before+k+"="
	} else {
		for _, a := range p.Arguments {
			if _, set := done[a.Name]; !set {
				arg = a.Name
				break
			}
		}
	}
	if arg == "" {
		return empty, nil
	}
	res, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: p.Name},
		Argument: mcp.CompleteParamsArgument{Name: arg, Value: word},
		Context:  &mcp.CompleteContext{Arguments: done},
	})
	if gone := s.gone(err); gone != nil {
		return nil, gone
	}
	if err != nil {
		return nil, fmt.Errorf("MCP completion/complete: %v", err)
	}
	for _, v := range res.Completion.Values {
		empty.Completions = append(empty.Completions, sdk.Completion{Value: prefix + v, Hint: arg})
	}
	return empty, nil
}

func (s *server) prompt(name string) (*mcp.Prompt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.names.prompts[name]
	if !ok {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "no command " + strconv.Quote(name)}
	}
	return p, nil
}
