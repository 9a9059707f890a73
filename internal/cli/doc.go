// Package cli is the bingo command line as a function of (args, stdin,
// stdout, stderr) → exit status, so it is tested in-process and as the
// built binary alike.
//
// What a person types and sees (every subcommand, every flag with its
// text, where output goes, exit statuses, the environment) is
// docs/cli.md; a test here fails when a subcommand, flag or environment
// variable this package defines or reads is missing from it. This comment
// keeps only the why.
//
// Flags are defined once, on one set, for every subcommand (the
// subcommand table names those of one subcommand only), so that a flag may come anywhere among
// the arguments, as in most modern command lines; which subcommand took
// which is checked after parsing, and an unknown flag anywhere is a usage
// error rather than the prompt's text. The first -- ends them.
//
// Everything a plugin or a model wrote (tool output, streamed text,
// notices, questions, the approval prompt's call, command outcomes, error
// and denial messages) is cleaned of control characters before it reaches
// the terminal (render.Clean, or render.Line where it must stay on one
// line), so it cannot erase "X asks:" or draw a fake "Run …? [y/N]".
//
// Stdin is read only while a question waits, one line per read, and only
// while bingo is in its terminal's foreground: a read of the terminal from
// a background process group stops the whole process (SIGTTIN), which is
// how bingo once hung under timeout(1). A read cannot be cancelled, so a
// withdrawn question leaves its read running and the person's next line
// answers the next question.
//
// Quitting (a second Ctrl-C, SIGTERM, SIGHUP) stops every plugin within 2
// seconds however it behaves: the end of its stdin first, SIGTERM to its
// process group after 1 second, SIGKILL after 2 (host.Quit). Plugins run
// in their own process groups, so exiting alone would leave one that
// ignores the end of its stdin running. Should bingo itself be killed
// (SIGKILL, a crash), each plugin's shepherd sees the end of its lifeline
// and ends the plugin's whole tree (Linux: transport/exec,
// internal/shepherd).
package cli
