package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/term"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// own text: it is kept on one line so it cannot pass for bingo's output.
func (r *run) notice(n bridge.Notice) {
	r.prompter.line(r.stderr, render.Line("bingo: "+n.String()))
}

func (r *run) view(v sdk.View) {
	if r.o.print {
		render.Fold(r.stdout, v)
		return
	}
	render.View(r.stdout, v, render.Options{Color: r.color, Width: termWidth(r.stdout)})
}

func termWidth(w io.Writer) int {
	if h, ok := w.(hushWriter); ok {
		w = h.w
	}
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 0
}

// output prints a tool's output: the text the model reads, then the View
// the person sees.
func (r *run) output(out sdk.ToolOutput) {
	if text := out.Text(); text != "" {
		fmt.Fprintln(r.stdout, render.Clean(text))
	}
	if out.Display != nil {
		r.view(*out.Display)
	}
}

func (r *run) plugins(h *host.Host) int {
	infos := h.Plugins()
	if r.o.json {
		if infos == nil {
			infos = []host.PluginInfo{}
		}
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(infos)
		return ExitOK
	}
	if len(infos) == 0 {
		fmt.Fprintln(r.stdout, "no plugins (install one in ~/.bingo/plugins/<name>/ or pass --plugin-dir)")
		return ExitOK
	}
	rows := make([]render.ListingRow, 0, len(infos))
	for _, p := range infos {
		// A plugin that speaks the plugin wire, as almost all do, shows its
		// transport alone; an MCP server says so beside it.
		transport := p.Transport
		if p.Protocol == manifest.ProtocolMCP {
			transport += ", protocol mcp"
		}
		trust := p.Trust
		if trust == "" {
			trust = "yours" // the person's own, or a --plugin-dir they named
		}
		// Why it failed or is shadowed goes under its row: however long,
		// it does not widen the others.
		note := ""
		switch {
		case p.Error != "":
			note = p.Status + ": " + p.Error
		case p.ToolDefinitionBytes > 0:
			// What fills the model's context is the person's to see.
			note = fmt.Sprintf("tool definitions: %d bytes a model request (about %d tokens; turn.toolsMax)", p.ToolDefinitionBytes, (p.ToolDefinitionBytes+3)/4)
		}
		if p.Isolation != "" {
			// How an exec plugin is confined, on a line of its own.
			if note != "" {
				note += "\n"
			}
			note += "sandbox: " + p.Isolation
		}
		if p.Asks != "" {
			if note != "" {
				note += "\n"
			}
			note += "asks: " + render.Line(p.Asks)
		}
		rows = append(rows, render.ListingRow{
			Cells: []string{p.Name, p.Version, p.Layer, transport, trust, p.Status, strings.Join(p.Contributes, ", ")},
			Note:  note,
		})
	}
	width := termWidth(r.stdout)
	if width == 0 {
		width = listingWidth
	}
	render.Listing(r.stdout, []string{"NAME", "VERSION", "LAYER", "TRANSPORT", "TRUST", "STATUS", "CONTRIBUTES"}, rows, width)
	return ExitOK
}

// listingWidth is how wide bingo plugins draws its table when stdout is
// not a terminal.
const listingWidth = 100

// trust records (or with --revoke withdraws) the person's trust in the
// project around the working directory, and prints what it trusted.
func (r *run) trust() int {
	if r.o.revoke {
		project, was, err := host.Revoke(r.home, r.cwd)
		if err != nil {
			r.fail(err)
			return ExitError
		}
		if !was {
			fmt.Fprintf(r.stdout, "%s was not trusted\n", project)
			return ExitOK
		}
		fmt.Fprintf(r.stdout, "no longer trusted: %s\n", project)
		return ExitOK
	}
	rep, err := host.Trust(r.home, r.cwd)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	var old *trust.OldVersionError
	switch {
	case errors.As(rep.MovedWhy, &old):
		fmt.Fprintf(r.stderr, "bingo: %v; it is kept as %s and a new one started\n", old, rep.MovedAside)
	case rep.MovedAside != "":
		fmt.Fprintf(r.stderr, "bingo: your trust file was unreadable; it is kept as %s and a new one started\n", rep.MovedAside)
	}
	fmt.Fprintf(r.stdout, "trusted %s (recorded in %s)\n", rep.Project, rep.Record)
	fmt.Fprintf(r.stdout, "  pinned: every file of each plugin's directory, and each file its entry names inside %s\n", rep.Repository)
	width := termWidth(r.stdout)
	for _, p := range rep.Plugins {
		fmt.Fprintf(r.stdout, "  plugin %s %s (%d files)\n", render.Line(p.Name), p.Digest, len(p.Files))
		writeRuns(r.stdout, "    runs: ", "      ", rep.Runs[p.Name], width)
		for _, f := range sortedKeys(p.Files) {
			fmt.Fprintf(r.stdout, "    %s: %s\n", render.Line(f), render.Line(p.Files[f]))
		}
		for _, f := range p.Outside {
			fmt.Fprintf(r.stdout, "    not pinned, outside the repository: %s\n", render.Line(f))
		}
	}
	fmt.Fprintf(r.stdout, "  settings .bingo/settings.json: %s\n", rep.Settings)
	for _, p := range rep.Skipped {
		r.fail(fmt.Errorf("%v; not trusted (it runs nothing)", p))
	}
	for _, err := range rep.Unpinned {
		r.fail(fmt.Errorf("%v; not trusted", err))
	}
	if len(rep.Unpinned) > 0 {
		return ExitError
	}
	return ExitOK
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// call runs one tool call. What went wrong on bingo's side (a refusal, no
// such tool, a plugin that did not answer) is bingo's to say, on stderr;
// the output CallTool returns with it only repeats it for a model. A tool's
// own error answer (isError) is the tool's result, as a model would read
// it: it goes to stdout like any answer, and the exit status is 1.
func (r *run) call(ctx context.Context, h *host.Host, tool string, input json.RawMessage) int {
	out, err := h.CallTool(ctx, sdk.ToolCallRequest{Name: tool, Input: input}, 0, r)
	r.endProgress()
	if err != nil {
		r.fail(err)
		return ExitError
	}
	r.output(out)
	if out.IsError {
		return ExitError
	}
	return ExitOK
}

func (r *run) complete(ctx context.Context, h *host.Host, line string) int {
	cs, err := h.Complete(ctx, line)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	for _, c := range cs {
		// A hint follows its value after a tab, as shells' completion
		// protocols take it; neither may hold a tab of its own.
		if c.Hint != "" {
			fmt.Fprintf(r.stdout, "%s\t%s\n", render.Line(c.Value), render.Line(c.Hint))
			continue
		}
		fmt.Fprintln(r.stdout, render.Line(c.Value))
	}
	return ExitOK
}

// fail reports err on one line of stderr. An error's message may carry a
// plugin's or hook's words (a reason, an RPC error), so it is cleaned.
func (r *run) fail(err error) {
	r.prompter.line(r.stderr, render.Line("bingo: "+err.Error()))
}

func (r *run) command(ctx context.Context, h *host.Host, line string) int {
	out, err := h.RunCommand(ctx, line)
	if err != nil {
		r.fail(err)
		return ExitError
	}
	if out.Kind == sdk.OutcomePrompt {
		return r.turn(ctx, h, out.Prompt)
	}
	return r.outcome(strings.SplitN(line, " ", 2)[0], out)
}

// outcome shows what the command name answered (any kind but a prompt).
// Its text and message are the plugin's: cleaned like a tool's output.
func (r *run) outcome(name string, out sdk.CommandOutcome) int {
	name = render.Line(name)
	switch out.Kind {
	case sdk.OutcomeView:
		if out.View != nil {
			r.view(*out.View)
		}
	case sdk.OutcomeText:
		fmt.Fprintln(r.stdout, render.Clean(out.Text))
	case sdk.OutcomeError:
		fmt.Fprintf(r.stderr, "bingo: %s: %s\n", name, render.Line(out.Message))
		return ExitError
	case sdk.OutcomeNone, "":
	default:
		fmt.Fprintf(r.stderr, "bingo: %s answered an outcome of unknown kind %q\n", name, out.Kind)
		return ExitError
	}
	return ExitOK
}
