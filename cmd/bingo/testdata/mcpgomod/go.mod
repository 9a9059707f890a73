// A module for the tests only: it requires mcp-go, whose everything
// example TestMCPGo builds for wasip1 as it is published.
module bingo.test/mcpgo

go 1.26

require github.com/mark3labs/mcp-go v1.2.1
