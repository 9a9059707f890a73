// Package cli is the bingo command line as a function of (args, stdin,
// stdout, stderr) → exit status, so it is tested in-process and as the
// built binary alike.
//
//	bingo [flags] PROMPT            a PROMPT starting with / runs that command
//	bingo call [flags] TOOL [JSON]  one tool call exactly as a model's call runs
//	bingo complete [flags] LINE     completions for a partial command line
//	bingo plugins [--json]          what loaded, from where, and what it offers
//
// Flags: --print (fold Views to text, no prompts, no colour, no progress),
// --plugin-dir DIR (repeatable), --cwd DIR, --allow TOOL (repeatable).
// Exit status: 0 success, 1 the command or tool reported an error or was
// denied, 2 usage error.
//
// Output: the answer goes to stdout; notices, progress and questions go to
// stderr. A View is drawn as a real table or list (colour only on a
// terminal); --print folds it to plain text. The live progress line of a
// running tool is redrawn in place on a terminal; when stderr is not a
// terminal each progress line is written as its own line, and --print
// writes none.
package cli
