// Package cli is the bingo command line as a function of (args, stdin,
// stdout, stderr) → exit status, so it is tested in-process and as the
// built binary alike.
//
//	bingo [flags] PROMPT...         a turn; a PROMPT starting with / runs that command
//	bingo call [flags] TOOL [JSON]  one tool call exactly as a model's call runs
//	bingo complete [flags] LINE     completions for a partial command line
//	bingo plugins [flags]           what loaded, from where, whether it is trusted, and what it offers
//	bingo plugins check [flags] DIR the conformance checker (internal/check): exit 0 only if DIR's plugin conforms
//	bingo plugins new NAME --lang L a new plugin in python, node or go (internal/scaffold), into --dir DIR or ./NAME
//	bingo trust [flags]             trust the project as it is now (or withdraw that); starts nothing
//	bingo help [SUBCOMMAND]         the usage, or one subcommand's
//	bingo version                   bingo's version, the plugin protocol it speaks, its Go
//
// Flags: --print (fold Views to text, no prompts, no colour, no progress),
// --plugin-dir DIR (repeatable; a directory of plugins, or one plugin's own
// directory, which loads that plugin), --cwd DIR, --allow TOOL
// (repeatable), --trace; plugins --json (check's report as JSON too),
// plugins check --inputs FILE, plugins new --lang and --dir, trust
// --revoke. -h or --help shows the
// usage (after a subcommand, its own) on stdout. A --cwd or --plugin-dir
// that is not a directory is a usage error.
//
// Flags may come anywhere among the arguments, before or after the
// subcommand's name and the prompt's words (bingo how many words --print),
// as in most modern command lines. The first -- ends them: what follows it
// is the prompt's (or the subcommand's arguments) as written, so
// bingo -- -1 is not a flag, and bingo -- help asks the model about help.
// An unknown flag anywhere is a usage error, never the prompt's text: a
// prompt word starting with - goes after --.
//
// Tracing: --trace, or BINGO_TRACE=1 in the environment, writes every line
// of every plugin's wire, both ways, into that plugin's log
// (~/.bingo/data/logs/plugin-<name>.log, next to its stderr), one line each:
// an RFC 3339 timestamp (nanoseconds), the direction (-> host to plugin,
// <- plugin to host) and the line as it crossed. Blank lines are not
// traced; of a line over the size cap, only its head.
//
// Exit status: 0 success, 1 the command or tool reported an error or was
// denied, 2 usage error.
//
// Trust: in a project the person has not trusted (see package host/trust),
// its exec plugins are not started. On a terminal (stdin and stderr, and
// not --print) the first run asks once whether to trust it; otherwise one
// notice says how. `bingo trust` prints what it pinned: each project
// plugin's digest and the record of every file the digest covers.
//
// Output: the answer goes to stdout; notices, progress, questions and
// every failure go to stderr, each of bingo's own lines prefixed "bingo:".
// A usage error says what is wrong, then shows the usage, on stderr; asked
// for (help, -h), the usage is the answer, on stdout. A View is drawn as a
// real table or list (colour only on a terminal); --print folds it to
// plain text. The live progress line of a running tool is redrawn in place
// on a terminal; when stderr is not a terminal each progress line is
// written as its own line, and --print writes none.
//
// A turn's output is in the order it happened, with --print too: the
// model's text as it streams (the text before a tool call is part of the
// answer), each tool's View when the tool ends, the final text. A call the
// gate or a hook refused is one line on stderr and the turn goes on (the
// model reads the refusal); a call a hook blocked ends the turn, exit 1,
// and is said once.
//
// bingo call: a refusal, an unknown tool, a plugin that stopped or did not
// answer are bingo's to say, on stderr, exit 1. A tool's own error answer
// (isError) is the tool's result, as a model would read it: on stdout like
// any answer, exit 1.
//
// Everything a plugin or a model wrote (tool output, streamed text,
// notices, questions, the approval prompt's call, command outcomes, error
// and denial messages) is cleaned of control characters before it reaches
// the terminal (render.Clean, or render.Line where it must stay on one
// line), so it cannot erase "X asks:" or draw a fake "Run …? [y/N]".
//
// Questions are answered from one reader goroutine per run, started by the
// first question: a withdrawn question leaves the person's next line to
// the next one. That goroutine reads stdin until EOF and is owned by the
// process, since a read of stdin cannot be cancelled.
//
// Ctrl-C: the first cancels the run (running tools hear tool/cancel, a
// streaming provider provider/cancel) and the turn ends cleanly, exit 1.
// The second prints "bingo: quitting", closes the host and exits 130.
// SIGTERM and SIGHUP (a closed terminal) quit at once the same way, exiting
// 143 and 129. Quitting stops every plugin within 2 seconds however it
// behaves: the end of its stdin first, SIGTERM to its process group after
// 1 second, SIGKILL after 2 (host.Quit); plugins run in their own process
// groups, so exiting alone would leave one that ignores the end of its
// stdin running. Should bingo itself be killed (SIGKILL, a crash), Linux
// kills its plugin processes for it (transport/exec: Pdeathsig).
package cli
