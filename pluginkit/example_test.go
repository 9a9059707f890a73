package pluginkit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/pluginkit"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// shout is a tool that answers its input in capitals, saying so on its
// progress line first.
type shout struct{}

func (shout) Spec() sdk.ToolSpec {
	return sdk.ToolSpec{Name: "shout", Description: "Shouts.", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (shout) Traits() sdk.ToolTraits { return sdk.ToolTraits{} }
func (shout) Call(_ context.Context, c sdk.ToolCall, ui sdk.CallUI) (sdk.ToolOutput, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(err.Error())}, IsError: true}, nil
	}
	ui.Progress("shouting")
	return sdk.ToolOutput{Parts: []sdk.Part{sdk.TextPart(strings.ToUpper(in.Text))}}, nil
}

// A plugin's main is pluginkit.Main(&plugin); here the same plugin is
// served on pipes, and the host's side is typed out by hand.
func Example() {
	plugin := &pluginkit.Plugin{Name: "loud", Version: "0.1.0", Tools: []sdk.Tool{shout{}}}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error)
	go func() {
		done <- plugin.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":5}}`)
	out.Scan()
	fmt.Println(out.Text())
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tool/call","params":{"callId":"c1","name":"shout","input":{"text":"hi"}}}`)
	out.Scan() // the progress line comes first
	fmt.Println(out.Text())
	out.Scan()
	fmt.Println(out.Text())
	inW.Close() // stdin ends: Serve returns nil
	fmt.Println(<-done)
	// Output:
	// {"id":1,"result":{"protocol":5,"name":"loud","version":"0.1.0","tools":[{"name":"shout","description":"Shouts.","inputSchema":{"type":"object"}}]},"jsonrpc":"2.0"}
	// {"jsonrpc":"2.0","method":"tool/progress","params":{"callId":"c1","tail":"shouting"}}
	// {"id":2,"result":{"output":{"parts":[{"type":"text","text":"HI"}]}},"jsonrpc":"2.0"}
	// <nil>
}
