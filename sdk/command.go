package sdk

import "context"

// ArgsKind says how a command takes its arguments.
type ArgsKind string

const (
	ArgsNone ArgsKind = "none" // the command takes no arguments
	ArgsFree ArgsKind = "free" // the rest of the line, as typed
)

// CommandArgs describes a command's arguments.
type CommandArgs struct {
	Kind ArgsKind `json:"kind" jsonschema:"enum=none,enum=free"`
	Hint string   `json:"hint,omitempty"`
}

// CommandSpec describes a slash command. Its name is what a person types
// after the slash, so it is held to the alphabet of tool names: no space
// (the arguments start there), no slash, nothing a terminal acts on.
type CommandSpec struct {
	Name string      `json:"name" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9_-]+$"`
	Hint string      `json:"hint,omitempty"`
	Args CommandArgs `json:"args"`
	// Instant commands run without a turn: no model is involved.
	Instant bool   `json:"instant,omitempty"`
	Family  string `json:"family,omitempty"`
}

// OutcomeKind tags a CommandOutcome.
type OutcomeKind string

const (
	OutcomeView   OutcomeKind = "view"   // show View
	OutcomeText   OutcomeKind = "text"   // show Text
	OutcomePrompt OutcomeKind = "prompt" // send Prompt to the model as the person's turn
	OutcomeError  OutcomeKind = "error"  // the command failed: Message says why
	OutcomeNone   OutcomeKind = "none"   // nothing to show
)

// CommandOutcome is what running a command produced.
type CommandOutcome struct {
	Kind    OutcomeKind `json:"kind" jsonschema:"enum=view,enum=text,enum=prompt,enum=error,enum=none"`
	View    *View       `json:"view,omitempty"`
	Text    string      `json:"text,omitempty"`
	Prompt  string      `json:"prompt,omitempty"`
	Message string      `json:"message,omitempty"`
}

// Completion is one candidate for what is being typed.
type Completion struct {
	Value string `json:"value"`
	Hint  string `json:"hint,omitempty"`
}

// CommandRun is one invocation of a command.
type CommandRun struct {
	Name    string `json:"name"`
	Args    string `json:"args"`
	Cwd     string `json:"cwd"`
	Session string `json:"session"`
}

// CompleteRequest asks a command for completions of its partial arguments.
type CompleteRequest struct {
	Name    string `json:"name"`
	Partial string `json:"partial"`
	Cwd     string `json:"cwd"`
}

// Command is a slash command with completion.
type Command interface {
	Spec() CommandSpec
	Run(ctx context.Context, run CommandRun) (CommandOutcome, error)
	Complete(ctx context.Context, req CompleteRequest) ([]Completion, error)
}
