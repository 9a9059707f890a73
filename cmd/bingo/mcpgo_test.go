package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// mcp-go (github.com/mark3labs/mcp-go), the most used third-party Go MCP
// library: its everything example, built for wasip1 as it is published,
// from the module proxy, by the test-only module testdata/mcpgomod. It is
// fetched once into the module cache; built once per test binary.
var mcpgoBuild struct {
	once    sync.Once
	dir     string // a plugin directory: plugin.json and plugin.wasm
	offline string // why the proxy could not be reached, if it could not
	err     error
}

func buildMCPGo(t *testing.T) string {
	t.Helper()
	mcpgoBuild.once.Do(func() {
		tmp := filepath.Dir(binDir)
		mod := filepath.Join(tmp, "mcpgo-mod")
		mcpgoBuild.dir = filepath.Join(tmp, "mcpgo", "everything")
		for _, d := range []string{mod, mcpgoBuild.dir} {
			if mcpgoBuild.err = os.MkdirAll(d, 0o755); mcpgoBuild.err != nil {
				return
			}
		}
		// A copy of the module, so that the build writes nothing in the
		// source tree.
		for _, f := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join("testdata", "mcpgomod", f))
			if err == nil {
				err = os.WriteFile(filepath.Join(mod, f), b, 0o644)
			}
			if err != nil {
				mcpgoBuild.err = err
				return
			}
		}
		manifest := `{"name": "everything", "version": "1.0.0", "entry": {"wasm": "${PLUGIN_ROOT}/plugin.wasm", "protocol": "mcp"}}`
		if mcpgoBuild.err = os.WriteFile(filepath.Join(mcpgoBuild.dir, "plugin.json"), []byte(manifest), 0o644); mcpgoBuild.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(mcpgoBuild.dir, "plugin.wasm"), "github.com/mark3labs/mcp-go/examples/everything")
		build.Dir = mod
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := build.CombinedOutput()
		if err == nil {
			return
		}
		for _, sign := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout", "GOPROXY=off", "proxyconnect", "network is unreachable"} {
			if strings.Contains(string(out), sign) {
				mcpgoBuild.offline = strings.TrimSpace(string(out))
				return
			}
		}
		mcpgoBuild.err = &buildFailure{args: build.Args, out: string(out), err: err}
	})
	if mcpgoBuild.err != nil {
		t.Fatal(mcpgoBuild.err)
	}
	if mcpgoBuild.offline != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("mcp-go cannot be fetched from the module proxy, and CI must run this test:\n%s", mcpgoBuild.offline)
		}
		t.Skipf("mcp-go cannot be fetched from the module proxy:\n%s", mcpgoBuild.offline)
	}
	return mcpgoBuild.dir
}

type buildFailure struct {
	args []string
	out  string
	err  error
}

func (e *buildFailure) Error() string {
	return strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.out
}

// An MCP server built on mcp-go, which calls signal.Notify and reads stdin
// on one goroutine while others answer, runs in the wasm sandbox with no
// change to its source.
func TestMCPGo(t *testing.T) {
	src := buildMCPGo(t)
	model, err := filepath.Abs("testdata/npmmodel")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{Dir: "testdata/mcpgo", Setup: func(e *testscript.Env) error {
		if err := setup("wordcount")(e); err != nil {
			return err
		}
		e.Setenv("MCPGO_SRC", src)
		e.Setenv("MODEL_SRC", model)
		return nil
	}})
}
