package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The natural-language turn, end to end: scripted Python plugins play the
// model, hooks, context contributors and services around the real bingo
// binary, with the real wordcount example as the tool. The same scripts
// run against both wordcount examples: the turn must not care which
// transport the tool crossed (nor its name, which is each example's own).
func TestTurnPython(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/turn", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":   grant,
		"status":  status,
		"expand":  expand,
		"waitlog": waitlog,
	}})
}

func TestTurnWasm(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/turn", Setup: setup("wordcount-wasm"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":   grant,
		"status":  status,
		"expand":  expand,
		"waitlog": waitlog,
	}})
}
