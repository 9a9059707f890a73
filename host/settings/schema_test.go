package settings_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bingo/bingo-plugin-rpc/host/gate"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
)

// TestMain runs the package's tests, noting every file the parser accepts
// in them (their files, FuzzParse's seeds), then checks that each is valid
// against the committed schema/settings.json: the schema must never refuse
// a file bingo takes. A file whose permission patterns the gate refuses is
// left out: bingo does not take it either (it is an error, or a notice and
// the pattern dropped), and the schema says so. An empty file is left
// out as well: the parser takes it as saying nothing, and it is not JSON.
func TestMain(m *testing.M) {
	var mu sync.Mutex
	var files [][]byte
	settings.OnParsed(func(data []byte) {
		mu.Lock()
		files = append(files, bytes.Clone(data))
		mu.Unlock()
	})
	code := m.Run()
	settings.OnParsed(nil)
	if code == 0 {
		if err := validAgainstTheSchema(files); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: the settings parser accepted files schema/settings.json refuses:\n"+err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

func validAgainstTheSchema(files [][]byte) error {
	path := filepath.Join("..", "..", "schema", "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	c := sjs.NewCompiler()
	if err := c.AddResource("settings.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("settings.json")
	if err != nil {
		return err
	}
	if len(files) < 50 {
		return fmt.Errorf("only %d files were parsed: is the hook in parse still called?", len(files))
	}
	var out bytes.Buffer
	for _, f := range files {
		if !patternsValid(f) {
			continue
		}
		inst, err := sjs.UnmarshalJSON(bytes.NewReader(f))
		if err == nil {
			err = sch.Validate(inst)
		}
		if err != nil {
			fmt.Fprintf(&out, "%s\n  %v\n", f, err)
		}
	}
	if out.Len() > 0 {
		return fmt.Errorf("%s", out.String())
	}
	return nil
}

// patternsValid reports whether every permission pattern in a settings
// file is one the gate takes.
func patternsValid(file []byte) bool {
	var f struct {
		Permissions map[string]json.RawMessage `json:"permissions"`
	}
	if json.Unmarshal(file, &f) != nil {
		return true
	}
	for _, raw := range f.Permissions {
		var pats []string
		_ = json.Unmarshal(raw, &pats)
		for _, p := range pats {
			if gate.Valid(p) != nil {
				return false
			}
		}
	}
	return true
}
