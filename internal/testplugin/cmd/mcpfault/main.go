// Command mcpfault runs the MCP server of package mcpfault on stdio, for
// the black-box tests: an MCP server that misbehaves on purpose.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin/mcpfault"
)

func main() {
	if err := mcpfault.New(os.Exit).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
