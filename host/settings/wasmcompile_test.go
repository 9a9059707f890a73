package settings

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Every compile bound a refusal can name is a key of wasmCompile, spelled
// as the refusal spells it, and setting it in a file sets that bound.
func TestWasmCompileKeysAreTheBoundsNames(t *testing.T) {
	keys := Keys()
	for _, bound := range []string{wasm.BoundModuleMiB, wasm.BoundFunctionKiB, wasm.BoundBlocks, wasm.BoundTime, wasm.BoundMemory} {
		msg := (&wasm.BoundError{Bound: bound, Key: DefaultWasmCompile().Bounds().Key}).Error()
		path := wasmCompileKey + "." + bound
		if !strings.Contains(msg, "setting "+path+" raises it") || !slices.Contains(keys, path) {
			t.Errorf("a refusal for %s says %q; the settings keys hold %v", bound, msg, slices.Contains(keys, path))
		}
	}
	s, err := parse("s.json", []byte(`{"wasmCompile": {"moduleMiB": 3, "functionKiB": 4, "blocksPerFunction": 5, "time": "6s", "memoryMiB": 7}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got Settings
	got.apply(s)
	if w := got.WasmCompile; w.ModuleMiB != 3 || w.FunctionKiB != 4 || w.BlocksPerFunction != 5 || w.Time.String() != "6s" || w.MemoryMiB != 7 {
		t.Fatalf("wasmCompile read as %+v", w)
	}
}

// The sandbox's memory default is the wasm transport's, not a number
// typed again: the key table and its docs say what the transport does.
func TestSandboxMemoryDefaultIsTheTransports(t *testing.T) {
	want := strconv.Itoa(wasm.DefaultMemoryLimitMiB)
	for _, k := range KeySpecs() {
		if k.Path == "sandbox.<name>.memoryMiB" && k.Default != want {
			t.Errorf("%s defaults to %s; the wasm transport's default is %s", k.Path, k.Default, want)
		}
	}
}
