package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The MCP example server (examples/plugins/wordcount-mcp), built twice from
// one source: natively, as the exec plugin wordcount-mcp, and for WASI, as
// the wasm plugin wordcount-mcp-wasm. Both are built on first use only, so
// the other black-box tests do not wait for them.
var mcpBuild struct {
	once  sync.Once
	err   error
	exec  string // a layer holding wordcount-mcp, its binary built
	wasm  string // a layer holding wordcount-mcp-wasm, its plugin.wasm built
	fault string // a plugin directory: internal/testplugin/cmd/mcpfault as the exec plugin fault
}

func buildMCP(t *testing.T) {
	t.Helper()
	mcpBuild.once.Do(func() {
		tmp := filepath.Dir(binDir)
		root, _ := filepath.Abs("../..")
		mcpBuild.exec = filepath.Join(tmp, "mcp-exec")
		mcpBuild.wasm = filepath.Join(tmp, "mcp-wasm")
		mcpBuild.fault = filepath.Join(tmp, "mcp-fault", "fault")
		steps := []struct {
			args []string
			wasm bool
		}{
			{args: []string{"mkdir", "-p", mcpBuild.exec, mcpBuild.wasm, mcpBuild.fault}},
			{args: []string{"go", "build", "-o", filepath.Join(mcpBuild.fault, "mcpfault"), "./internal/testplugin/cmd/mcpfault"}},
			{args: []string{"cp", "-r", filepath.Join(examples, "wordcount-mcp"), mcpBuild.exec}},
			{args: []string{"cp", "-r", filepath.Join(examples, "wordcount-mcp-wasm"), mcpBuild.wasm}},
			{args: []string{"go", "build", "-o", filepath.Join(mcpBuild.exec, "wordcount-mcp", "wordcount-mcp"), "./examples/plugins/wordcount-mcp"}},
			{args: []string{"go", "build", "-o", filepath.Join(mcpBuild.wasm, "wordcount-mcp-wasm", "plugin.wasm"), "./examples/plugins/wordcount-mcp"}, wasm: true},
		}
		manifest := `{"name": "fault", "version": "1", "entry": {"command": "${PLUGIN_ROOT}/mcpfault", "protocol": "mcp"}}`
		if mcpBuild.err = os.MkdirAll(mcpBuild.fault, 0o755); mcpBuild.err != nil {
			return
		}
		if mcpBuild.err = os.WriteFile(filepath.Join(mcpBuild.fault, "plugin.json"), []byte(manifest), 0o644); mcpBuild.err != nil {
			return
		}
		for _, s := range steps {
			mcpBuild.err = runCmd(s.args, func(c *exec.Cmd) {
				c.Dir = root
				if s.wasm {
					c.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
				}
			})
			if mcpBuild.err != nil {
				return
			}
		}
		// Compile the module once, into the shared cache, before any
		// script times a start: on a loaded machine a 14 MiB module
		// takes longer to compile than a handshake may.
		home := filepath.Join(tmp, "mcp-warm")
		if mcpBuild.err = linkWasmCache(home); mcpBuild.err != nil {
			return
		}
		settings := filepath.Join(home, ".bingo", "settings.json")
		if mcpBuild.err = os.WriteFile(settings, []byte(`{"deadlines": {"initialize": "5m"}}`), 0o644); mcpBuild.err != nil {
			return
		}
		warm := []string{filepath.Join(binDir, "bingo"), "plugins", "--plugin-dir", filepath.Join(mcpBuild.wasm, "wordcount-mcp-wasm")}
		mcpBuild.err = runCmd(warm, func(c *exec.Cmd) {
			c.Env = append(os.Environ(), "HOME="+home)
		})
	})
	if mcpBuild.err != nil {
		t.Fatal(mcpBuild.err)
	}
}

// setupMCP is setup with the MCP example as the plugin under test:
// MCP_SRC is its directory and MCP_NAME its name. The wasm compilation
// cache is shared (buildMCP warms it), so the 14 MiB module compiles once
// per test binary, not once per script.
func setupMCP(layer, name string) func(*testscript.Env) error {
	return func(e *testscript.Env) error {
		if err := setup("wordcount")(e); err != nil {
			return err
		}
		e.Setenv("MCP_SRC", filepath.Join(layer, name))
		e.Setenv("MCP_NAME", name)
		e.Setenv("FAULT_SRC", mcpBuild.fault)
		return nil
	}
}

// The same scripts drive the MCP server natively and in the wasm sandbox:
// they must answer alike.
func TestMCPExec(t *testing.T) {
	buildMCP(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/mcp", Setup: setupMCP(mcpBuild.exec, "wordcount-mcp"),
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"grant": grant, "status": status}})
}

func TestMCPWasm(t *testing.T) {
	buildMCP(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/mcp", Setup: setupMCP(mcpBuild.wasm, "wordcount-mcp-wasm"),
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"grant": grant, "status": status}})
}

// An MCP server that misbehaves on purpose (internal/testplugin/mcpfault),
// run as a process: each fault meets the rules every plugin meets.
func TestMCPFaults(t *testing.T) {
	buildMCP(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/mcpfault", Setup: setupMCP(mcpBuild.exec, "wordcount-mcp"),
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"grant": grant, "status": status, "waitlog": waitlog}})
}

// MCP servers configured as people already configure them: a project's
// .mcp.json, bingo mcp add/list/remove/import, remote servers.
func TestMCPConf(t *testing.T) {
	buildMCP(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/mcpconf", Setup: setupMCP(mcpBuild.exec, "wordcount-mcp"),
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"grant": grant, "status": status, "waitaddr": waitaddr, "rss": rss}})
}

// waitaddr FILE VAR waits (up to 30s) for a server started in the
// background to write the address it listens on to FILE, and sets VAR to
// it.
func waitaddr(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitaddr FILE VAR")
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && len(b) > 0 {
			ts.Setenv(args[1], string(b))
			return
		}
	}
	ts.Fatalf("%s: no address written within 30s", args[0])
}
