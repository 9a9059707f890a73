package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// turn runs a natural-language prompt. The model's text streams as it
// comes and each tool's View shows when the tool ends, in the order they
// happened, with --print too (its Views folded to text): the text before
// a tool call is part of the answer.
func (r *run) turn(ctx context.Context, h *host.Host, prompt string) int {
	tu := &turnUI{run: r}
	res, err := h.Turn(ctx, prompt, tu)
	return tu.end(res, err)
}

// end finishes the turn's output once h.Turn has returned res and err,
// and returns the exit status.
func (tu *turnUI) end(res agent.TurnResult, err error) int {
	r := tu.run
	r.prompter.endText()
	if err != nil {
		r.fail(err)
		return ExitError
	}
	if res.Interrupted {
		fmt.Fprintln(r.stderr, "bingo: the turn was interrupted")
		return ExitError
	}
	return ExitOK
}

// turnUI is the run's agent.TurnUI.
type turnUI struct {
	*run
}

// Text implements agent.TurnUI.
func (t *turnUI) Text(delta string) {
	// The model's text may quote a plugin's (a tool result, a web page)
	// or be steered by it: it must not drive the terminal.
	t.prompter.showText(render.Clean(delta))
}

// ToolResult implements agent.TurnUI.
func (t *turnUI) ToolResult(call sdk.ToolCallRequest, out sdk.ToolOutput, err error) {
	t.endProgress()
	// The model's text so far ends its line: the next step's text (or
	// this tool's View) starts a new one.
	t.prompter.endText()
	var denied *agent.DeniedError
	if errors.As(err, &denied) {
		// The turn goes on, the model reading the refusal: this is the
		// person's one line of it. (A call a hook blocked ends the turn,
		// and the turn's error, shown by end, is that one line.)
		t.fail(err)
		return
	}
	if out.Display != nil {
		t.view(*out.Display)
	}
}
