package scaffold

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// The C scaffold answers a request it has no memory for with an error and
// goes on: in wasm address 0 is writable, so an allocation that failed
// unchecked wrote over the module's own data (a greet whose name fills the
// heap trapped in sprintf), and a line whose parse ran out of memory was
// logged as not JSON and never answered. Under a 2 MiB limit, a name of
// 300 kB runs out in greet, one of 600 kB in the parse; either way the
// request gets an error naming its id, and the next is answered as usual.
func TestCScaffoldOutOfMemory(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no clang: CI installs it (.ci/run)")
		}
		t.Skip("no clang (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)")
	}
	dir := filepath.Join(t.TempDir(), "cgreet")
	if _, err := Write(dir, "cgreet", "c", ""); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", filepath.Join(dir, "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := wasm.NewHost(ctx, wasm.HostConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	tr := h.Transport(wasm.Config{Name: "cgreet", Path: filepath.Join(dir, "plugin.wasm"), MemoryLimitMiB: 2})

	for _, c := range []struct {
		method, params string
		size           int
	}{
		{"tool/call", `{"name":"greet","callId":"c1","input":{"name":"%s"}}`, 300_000},
		{"tool/call", `{"name":"greet","callId":"c1","input":{"name":"%s"}}`, 600_000},
		{"command/run", `{"name":"cgreet","args":"%s"}`, 300_000},
		{"command/run", `{"name":"cgreet","args":"%s"}`, 600_000},
	} {
		t.Run(fmt.Sprintf("%s %d", c.method, c.size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			conn, err := tr.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Kill()
			stop := context.AfterFunc(ctx, func() { conn.Kill() }) // a guest stuck
			defer stop()
			big := fmt.Sprintf(c.params, strings.Repeat("a", c.size))
			fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`+"\n", c.method, big)
			fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":2,"method":"command/run","params":{"name":"cgreet","args":"Ada"}}`+"\n")
			// The answers come in order: the last is id 2's.
			r := bufio.NewReader(conn)
			var answers []map[string]any
			for len(answers) == 0 || answers[len(answers)-1]["id"] != 2.0 {
				line, err := r.ReadBytes('\n')
				if err != nil {
					t.Fatalf("after %d answers: %v (wait: %v)", len(answers), err, conn.Wait())
				}
				var m map[string]any
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatalf("not JSON: %.200s", line)
				}
				if _, ok := m["id"]; ok {
					answers = append(answers, m)
				}
			}
			if len(answers) != 2 {
				t.Fatalf("answers %v, want one for id 1 then one for id 2", answers)
			}
			if e, _ := answers[0]["error"].(map[string]any); answers[0]["id"] != 1.0 || e == nil || e["message"] != "cgreet: out of memory" {
				t.Errorf("the big request's answer: %v, want an out of memory error for id 1", answers[0])
			}
			if out := fmt.Sprint(answers[1]["result"]); answers[1]["id"] != 2.0 || !strings.Contains(out, "Hello, Ada!") {
				t.Errorf("the next answer: %v, want Hello, Ada! for id 2", answers[1])
			}
		})
	}
}
