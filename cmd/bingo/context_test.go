package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// What reaches the model, through the real binary: a compaction may not
// put words in the person's mouth, and what a contributor adds reaches
// the model marked as that plugin's; a long tool result is cut, a turn
// past its budget shrinks, denied tools are not offered, and past
// turn.toolsMax the model searches for tools. The model is a scripted
// Python plugin of the person's that reports what it was sent, or the
// OpenAI-compatible stand-in (standin) that records every request; the
// repository's plugin is the Go test plugin built for wasm.
func TestContext(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/context", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":   grant,
		"status":  status,
		"standin": standin,
		"expand":  expand,
	}})
}
