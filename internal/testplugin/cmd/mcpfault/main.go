//go:build unix

// Command mcpfault runs the MCP server of package mcpfault on stdio, for
// the black-box tests: an MCP server that misbehaves on purpose.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
)

func main() {
	// Stopped, the process answers nothing more; the handler waits, so
	// its own answer cannot slip out while the signal lands.
	freeze := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		select {}
	}
	stray := func(line string) { fmt.Fprintln(os.Stdout, line) }
	hangup := func() { _ = os.Stdout.Close() }
	if err := mcpfault.New(mcpfault.Process{Exit: os.Exit, Freeze: freeze, Print: stray, Hangup: hangup}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
