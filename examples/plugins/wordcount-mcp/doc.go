// Command wordcount-mcp is an MCP server written with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), speaking MCP on stdio and
// knowing nothing of bingo. bingo runs it as a plugin because its
// plugin.json says "protocol": "mcp"; package mcpbridge translates.
//
// It is shipped twice from this one source: native, as an exec plugin
// (this directory; make builds ./wordcount-mcp here), and compiled to
// WASI preview1, as a wasm plugin in ../wordcount-mcp-wasm (make builds
// its plugin.wasm), which runs in the host's wazero sandbox with no rights
// beyond what the person grants: something no MCP host offers.
//
//	go build -o examples/plugins/wordcount-mcp/wordcount-mcp ./examples/plugins/wordcount-mcp
//	GOOS=wasip1 GOARCH=wasm go build -o examples/plugins/wordcount-mcp-wasm/plugin.wasm ./examples/plugins/wordcount-mcp
//
// What it offers, one of each kind the bridge maps:
//   - tool count: counts the lines, words and characters of a text,
//     reporting progress line by line and logging each count; an empty
//     text is a tool error (isError), and the counts come back as
//     structured content too. When the person's plugins.<name> settings
//     say {"unique": true} (read from the client's experimental "bingo"
//     capability), it also counts distinct words.
//   - prompt summarize(style, topic): a request to the model, with the
//     style argument completed (completion/complete).
//   - resource wordcount://about: what the server is.
package main
