package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// pluginName is the manifest's, which every message starts with.
const pluginName = "wordcount-wasm"

func main() {
	fmt.Fprintf(os.Stderr, pluginName+": started (protocol %d)\n", protocol.Version)
	pluginkit.Main(newPlugin(os.Stderr))
}

// newPlugin is wordcount as pluginkit serves it: the kit answers the
// handshake, routes each request and writes the wire; log is where the
// plugin's own lines go (stderr, which the host keeps as the plugin's log).
func newPlugin(log io.Writer) *pluginkit.Plugin {
	return &pluginkit.Plugin{
		Name:     pluginName,
		Version:  "0.1.0",
		Tools:    []sdk.Tool{countTool{}},
		Commands: []sdk.Command{wordcountCommand{}},
		// The kit answers protocol 5 whatever was asked: the host refuses
		// a protocol it does not speak, which is its call, not ours.
		Initialize: func(_ context.Context, p protocol.InitializeParams) error {
			if p.Protocol != protocol.Version {
				fmt.Fprintf(log, pluginName+": host asked for protocol %d; answering %d\n", p.Protocol, protocol.Version)
			}
			return nil
		},
	}
}

// countTool is the tool the model calls: count {path}.
type countTool struct{}

var _ sdk.Tool = countTool{}

// inputSchema keeps its keys in this order on the wire, as main.py does.
const inputSchema = `{"type":"object","properties":{"path":{"type":"string","description":"The file to count: relative to the working directory, or absolute."}},"required":["path"]}`

func (countTool) Spec() sdk.ToolSpec {
	return sdk.ToolSpec{
		Name:        "count",
		Description: "Counts the words, lines and characters in a file.",
		InputSchema: json.RawMessage(inputSchema),
	}
}

// Traits claims nothing: the host would not believe a plugin's claim anyway.
func (countTool) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }

func (countTool) Call(_ context.Context, call sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
	// Anything but an object with a non-empty string path is "no path":
	// decoding into a map keeps a wrongly typed path from becoming a
	// protocol error, which is what main.py does too.
	var input map[string]any
	_ = json.Unmarshal(call.Input, &input)
	path, _ := input["path"].(string)
	if path == "" {
		return failed(pluginName + ": path is required"), nil
	}
	ui.Progress("reading " + path)
	data, err := readFile(call.Cwd, path)
	if err != nil {
		return failed(err.Error()), nil
	}
	c := count(data)
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(summary(path, c))}, Display: table(path, c)}, nil
}

// failed is a tool's own failure: an output the model reads, not an error.
func failed(text string) sdk.ToolOutput {
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(text)}, IsError: true}
}

// wordcountCommand is /wordcount <path>, for the person.
type wordcountCommand struct{}

var _ sdk.Command = wordcountCommand{}

func (wordcountCommand) Spec() sdk.CommandSpec {
	return sdk.CommandSpec{
		Name:    "wordcount",
		Hint:    "count the words in a file",
		Args:    sdk.CommandArgs{Kind: sdk.ArgsFree, Hint: "<path>"},
		Instant: true,
		Family:  "plugin",
	}
}

func (wordcountCommand) Run(_ context.Context, run sdk.CommandRun) (sdk.CommandOutcome, error) {
	path := strings.Trim(run.Args, whitespace)
	if path == "" {
		return sdk.CommandOutcome{Kind: sdk.OutcomeError, Message: "usage: /wordcount <path>"}, nil
	}
	data, err := readFile(run.Cwd, path)
	var re *readError
	if errors.As(err, &re) {
		return sdk.CommandOutcome{Kind: sdk.OutcomeError, Message: re.Error()}, nil
	}
	return sdk.CommandOutcome{Kind: sdk.OutcomeView, View: table(path, count(data))}, nil
}

func (wordcountCommand) Complete(_ context.Context, req sdk.CompleteRequest) ([]sdk.Completion, error) {
	return complete(req.Cwd, req.Partial), nil
}
