// Command bingo is the agent host's command line: it loads the person's
// plugins (exec and wasm), runs a command, a tool call or a turn through
// them, and shows the answer. See internal/cli for the surface.
package main

import (
	"os"

	"github.com/bingo/bingo-plugin-rpc/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
