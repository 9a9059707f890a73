package manifest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Load one plugin directory and see ${PLUGIN_ROOT} expanded.
func ExampleLoad() {
	plugins, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(plugins)
	dir := filepath.Join(plugins, "wordcount")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "plugin.json"), []byte(`{
	  "name": "wordcount",
	  "version": "0.1.0",
	  "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}
	}`), 0o644)

	m, err := manifest.Load(dir, manifest.LayerUser)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Name, m.Version, m.Entry.Transport(), m.Entry.Command)
	fmt.Println(strings.ReplaceAll(m.Entry.Args[0], m.Root, "<root>"))
	// Output:
	// wordcount 0.1.0 exec python3
	// <root>/main.py
}

// Discover every layer: the project's plugin wins the name, and a broken
// manifest is one Problem while the rest load.
func ExampleDiscover() {
	tmp, _ := os.MkdirTemp("", "layers")
	defer os.RemoveAll(tmp)
	write := func(layer, name, content string) {
		dir := filepath.Join(tmp, layer, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "plugin.json"), []byte(content), 0o644)
	}
	write("user", "wordcount", `{"name": "wordcount", "version": "1.0.0", "entry": {"command": "wc"}}`)
	write("project", "wordcount", `{"name": "wordcount", "version": "2.0.0", "entry": {"wasm": "plugin.wasm"}}`)
	write("project", "typo", `{"name": "typo", "version": "1", "entyr": {}}`)

	found, problems := manifest.Discover([]manifest.Layer{
		{Name: manifest.LayerUser, Dir: filepath.Join(tmp, "user")},
		{Name: manifest.LayerProject, Dir: filepath.Join(tmp, "project")},
	})
	for _, m := range found {
		fmt.Println(m.Name, m.Version, m.Layer, m.Entry.Transport())
	}
	for _, p := range problems {
		fmt.Println(strings.ReplaceAll(p.Error(), tmp, "<tmp>"))
	}
	// Output:
	// wordcount 2.0.0 project wasm
	// plugin <tmp>/project/typo/plugin.json: unknown field "entyr" in the manifest (known fields: name, version, entry, config, permissions)
}
