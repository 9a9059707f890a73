package manifest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

func TestPluginName(t *testing.T) {
	for server, want := range map[string]string{
		"github": "github", "GitHub": "github", "my_server.v2": "my-server-v2",
		"--weird  name--": "weird-name", "@scope/pkg": "scope-pkg",
	} {
		if got, err := manifest.PluginName(server); err != nil || got != want {
			t.Errorf("PluginName(%q) = %q, %v; want %q", server, got, err, want)
		}
	}
	for _, server := range []string{"", "___", "日本", strings.Repeat("a", 41)} {
		if got, err := manifest.PluginName(server); err == nil {
			t.Errorf("PluginName(%q) = %q, want an error", server, got)
		}
	}
}

func TestDiscoverMCPFile(t *testing.T) {
	proj := t.TempDir()
	plugin(t, filepath.Join(proj, ".bingo", "plugins"), "taken", "1")
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"mcpServers": {
	  "My_Files": {"command": "npx", "args": ["-y", "${PKG:-fs}"], "env": {"TOKEN": "${TOKEN}"}},
	  "remote": {"type": "http", "url": "https://example.com/${P}", "headers": {"Authorization": "Bearer ${TOKEN}"}, "other": 1},
	  "old": {"type": "sse", "url": "https://example.com/sse"},
	  "my-files": {"command": "x"},
	  "taken": {"command": "x"},
	  "local": {"command": "./bin/srv"}
	}}`)
	found, problems := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(proj)})
	var names []string
	byName := map[string]*manifest.Manifest{}
	for _, m := range found {
		names = append(names, m.Name)
		byName[m.Name] = m
	}
	if want := []string{"local", "my-files", "remote", "taken"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("found %v, want %v", names, want)
	}
	if len(problems) != 3 {
		t.Fatalf("problems %v, want 3 (sse, a name taken twice, a name of .bingo/plugins)", problems)
	}
	for i, want := range []string{`"old"`, `"my-files": its plugin name my-files is already server "My_Files"'s`, `"taken": its plugin name taken is the plugin`} {
		if !strings.Contains(problems[i].Error(), want) {
			t.Errorf("problem %d = %v, want it to contain %s", i, problems[i], want)
		}
	}
	files := byName["my-files"]
	if files.Server != "My_Files" || files.Layer != manifest.LayerProject || files.Entry.Protocol != manifest.ProtocolMCP ||
		files.Entry.Args[1] != "${PKG:-fs}" || files.Entry.Env["TOKEN"] != "${TOKEN}" {
		t.Errorf("my-files = %+v: want it unexpanded, protocol mcp, server My_Files", files)
	}
	if got := byName["local"].Entry.Command; got != filepath.Join(proj, "bin", "srv") {
		t.Errorf("a relative command is %s, want it beside the file", got)
	}
	remote := byName["remote"]
	if remote.Entry.Transport() != manifest.TransportHTTP || remote.Entry.Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Errorf("remote = %+v", remote.Entry)
	}

	env := map[string]string{"TOKEN": "s3cret", "P": "mcp"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	e, err := files.Entry.Expand(lookup)
	if err != nil || e.Args[1] != "fs" || e.Env["TOKEN"] != "s3cret" || files.Entry.Env["TOKEN"] != "${TOKEN}" {
		t.Errorf("Expand = %+v, %v (the original must stay as it was)", e, err)
	}
	e, err = remote.Entry.Expand(lookup)
	if err != nil || e.URL != "https://example.com/mcp" || e.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("Expand = %+v, %v", e, err)
	}
	delete(env, "TOKEN")
	if _, err := remote.Entry.Expand(lookup); err == nil || !strings.Contains(err.Error(), "${TOKEN} is not set") {
		t.Errorf("Expand of an unset variable: %v", err)
	}

	// Pinned by what the entry says, not by its layout.
	before := string(remote.Raw)
	write(`{"mcpServers": {"remote": {"other": 1, "headers": {"Authorization": "Bearer ${TOKEN}"},
	   "url": "https://example.com/${P}", "type": "http"}}}`)
	found, _ = manifest.Discover([]manifest.Layer{manifest.ProjectLayer(proj)})
	for _, m := range found {
		if m.Name == "remote" && string(m.Raw) != before {
			t.Errorf("Raw %s, want %s", m.Raw, before)
		}
	}
}

func TestParseMCPConfigVSCode(t *testing.T) {
	servers, err := manifest.ParseMCPConfig([]byte(`{"servers": {"fs": {"type": "stdio", "command": "npx", "args": ["a"]}}, "inputs": []}`), "/x")
	if err != nil || len(servers) != 1 || servers[0].Name != "fs" || servers[0].Entry.Command != "npx" || servers[0].Err != nil {
		t.Fatalf("ParseMCPConfig = %+v, %v", servers, err)
	}
	if _, err := manifest.ParseMCPConfig([]byte(`{"other": {}}`), "/x"); err == nil {
		t.Error("a file without mcpServers or servers was accepted")
	}
}

// A repository's .mcp.json counts against the project layer's cap with its
// directories.
func TestDiscoverMCPFileCap(t *testing.T) {
	proj := t.TempDir()
	for i := range manifest.MaxProjectPlugins - 1 {
		plugin(t, filepath.Join(proj, ".bingo", "plugins"), fmt.Sprintf("p%02d", i), "1")
	}
	if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers": {"s1": {"command": "x"}, "s2": {"command": "x"}, "s3": {"command": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	found, problems := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(proj)})
	if len(found) != manifest.MaxProjectPlugins || len(problems) != 1 || !strings.Contains(problems[0].Error(), `servers from "s2" on not loaded`) {
		t.Errorf("found %d, problems %v; want %d and one problem naming s2", len(found), problems, manifest.MaxProjectPlugins)
	}
}

// A file of many servers that cannot be plugins is a few problems: the
// first ShownMCPProblems, then one counting the rest from the first of
// them. Its good servers still load.
func TestLoadMCPFileManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers": {"good": {"command": "x"}`)
	for i := range 1000 {
		fmt.Fprintf(&b, `, "bad%d": {"type": "carrier-pigeon"}`, i)
	}
	b.WriteString(`, "also-good": {"url": "https://example.com/mcp"}}}`)
	file := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	found, problems := manifest.LoadMCPFile(file, manifest.LayerProject)
	if len(found) != 2 || found[0].Name != "good" || found[1].Name != "also-good" {
		t.Errorf("found %v, want good and also-good", found)
	}
	if len(problems) != manifest.ShownMCPProblems+1 {
		t.Fatalf("%d problems, want %d: %v", len(problems), manifest.ShownMCPProblems+1, problems)
	}
	for i, p := range problems[:manifest.ShownMCPProblems] {
		if want := fmt.Sprintf(`server "bad%d": "type" is "carrier-pigeon"`, i); !strings.HasPrefix(p.Err.Error(), want) {
			t.Errorf("problem %d: %v, want it to start %s", i, p, want)
		}
	}
	if want := fmt.Sprintf(`%d more servers, from "bad%d" on, cannot be plugins either`, 1000-manifest.ShownMCPProblems, manifest.ShownMCPProblems); problems[manifest.ShownMCPProblems].Err.Error() != want {
		t.Errorf("last problem %v, want %s", problems[manifest.ShownMCPProblems], want)
	}
}
