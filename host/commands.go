package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ParseCommand splits "/name args" into name and args.
func ParseCommand(line string) (name, args string, ok bool) {
	if !strings.HasPrefix(line, "/") {
		return "", "", false
	}
	name, args, _ = strings.Cut(line[1:], " ")
	return name, strings.TrimLeft(args, " "), name != ""
}

// RunCommand runs a "/name args" line.
func (h *Host) RunCommand(ctx context.Context, line string) (sdk.CommandOutcome, error) {
	name, args, ok := ParseCommand(line)
	if !ok {
		return sdk.CommandOutcome{}, fmt.Errorf("not a command: %q", line)
	}
	cmd, ok := h.reg.Command(name)
	if !ok {
		return sdk.CommandOutcome{}, fmt.Errorf("unknown command /%s (bingo complete / lists them)", name)
	}
	return cmd.Run(ctx, sdk.CommandRun{Name: name, Args: args, Cwd: h.cfg.Cwd, Session: h.cfg.Session})
}

// Complete returns completions for a partial command line: command names
// while the name is being typed, then the command's own completion.
func (h *Host) Complete(ctx context.Context, line string) ([]sdk.Completion, error) {
	if !strings.HasPrefix(line, "/") {
		return nil, nil
	}
	name, partial, hasArgs := strings.Cut(line[1:], " ")
	if !hasArgs {
		var out []sdk.Completion
		for _, n := range h.reg.CommandNames() {
			if strings.HasPrefix(n, name) {
				c, _ := h.reg.Command(n)
				out = append(out, sdk.Completion{Value: "/" + n, Hint: c.Spec().Hint})
			}
		}
		return out, nil
	}
	cmd, ok := h.reg.Command(name)
	if !ok {
		return nil, fmt.Errorf("unknown command /%s", name)
	}
	return cmd.Complete(ctx, sdk.CompleteRequest{Name: name, Partial: strings.TrimLeft(partial, " "), Cwd: h.cfg.Cwd})
}

// routeService is the bridge's ServiceRouter: one plugin's call to a
// service another offers. A plugin of a project the person has not
// trusted reaches only its own project's services: the person's plugins
// serve with the person's authority (their files, their keys, their
// network), which a repository's sandboxed plugin must not borrow.
func (h *Host) routeService(ctx context.Context, from, key, method string, params json.RawMessage) (json.RawMessage, error) {
	var may func(owner string) error
	if h.trust.untrustedOwner(from) {
		may = func(owner string) error {
			if h.trust.ofProject(owner) {
				return nil
			}
			return fmt.Errorf("service %q is not this repository's: a plugin of a project you have not trusted may call only its own project's services", key)
		}
	}
	return h.reg.CallServiceIf(ctx, key, method, params, may)
}
