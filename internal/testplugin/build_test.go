package testplugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// build builds cmd/testplugin for goos/goarch into a temporary file.
func build(t *testing.T, goos, goarch string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the plugin with: %v", err)
	}
	out := filepath.Join(t.TempDir(), "testplugin")
	cmd := exec.CommandContext(t.Context(), goBin, "build", "-o", out, "./cmd/testplugin")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=%s GOARCH=%s go build ./cmd/testplugin: %v\n%s", goos, goarch, err, b)
	}
	return out
}

// script writes requests to a plugin's stdin one by one, reading the
// answer to each before the next, and returns the answers' results.
type script struct {
	t   *testing.T
	in  interface{ Write([]byte) (int, error) }
	out *bufio.Scanner
	id  int
}

func (s *script) call(method, params string) json.RawMessage {
	s.t.Helper()
	s.id++
	fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params)
	for s.out.Scan() {
		var m struct {
			ID     int
			Method string
			Result json.RawMessage
			Error  json.RawMessage
		}
		if json.Unmarshal(s.out.Bytes(), &m) != nil || m.Method != "" || m.ID != s.id {
			continue // a progress line, or garbage
		}
		if m.Error != nil {
			s.t.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
	s.t.Fatalf("%s: stdout ended: %v", method, s.out.Err())
	return nil
}

func TestNativeBinary(t *testing.T) {
	bin := build(t, "", "")
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Env = append(os.Environ(), "TESTPLUGIN_PROBE=native")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &script{t: t, in: stdin, out: bufio.NewScanner(stdout)}
	if res := s.call("initialize", `{"protocol":5,"config":{"k":"v"}}`); !strings.Contains(string(res), `"name":"testplugin"`) {
		t.Errorf("initialize = %s", res)
	}
	if res := s.call("tool/call", `{"callId":"1","name":"env"}`); !strings.Contains(string(res), "TESTPLUGIN_PROBE=native") {
		t.Errorf("env = %s", res)
	}
	if res := s.call("tool/call", `{"callId":"2","name":"config"}`); !strings.Contains(string(res), `"text":"{\"k\":\"v\"}"`) {
		t.Errorf("config = %s", res)
	}
	s.call("tool/call", `{"callId":"3","name":"stderr","input":{"text":"to the log"}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":99,"method":"tool/call","params":{"name":"exit","input":{"code":3}}}`)
	err := cmd.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("after exit 3 the process ended with %v", err)
	}
	if stderr.String() != "to the log" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// TestWasmBuildRuns builds the command for wasip1 and runs it in wazero:
// the handshake, a tool, the sandbox's environment, and exit's status.
func TestWasmBuildRuns(t *testing.T) {
	wasm, err := os.ReadFile(build(t, "wasip1", "wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The interpreter: compiling the 4 MiB module under -race takes tens
	// of seconds, and transport/wasm's own tests cover the compiler.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	defer outR.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
			WithStdin(inR).WithStdout(outW).WithStderr(os.Stderr).WithEnv("ONLY", "this"))
		outW.Close()
		inR.Close()
		ended <- err
	}()
	s := &script{t: t, in: inW, out: bufio.NewScanner(outR)}
	if res := s.call("initialize", `{"protocol":5}`); !strings.Contains(string(res), `"name":"testplugin"`) {
		t.Errorf("initialize = %s", res)
	}
	if res := s.call("tool/call", `{"callId":"1","name":"echo","input":{"text":"in wasm"}}`); !strings.Contains(string(res), `"text":"in wasm"`) {
		t.Errorf("echo = %s", res)
	}
	if res := s.call("tool/call", `{"callId":"2","name":"env"}`); !strings.Contains(string(res), `"text":"ONLY=this"`) {
		t.Errorf("env = %s", res)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":99,"method":"tool/call","params":{"name":"exit","input":{"code":4}}}`)
	err = <-ended
	if ee := (*sys.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("after exit 4 the module ended with %v", err)
	}
}
