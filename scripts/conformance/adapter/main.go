// Command adapter drives bingo as the client under test of the official
// MCP client conformance suite (@modelcontextprotocol/conformance, run by
// scripts/conformance/run.sh): the suite starts a scenario's server and
// runs `adapter URL` with the scenario's name in MCP_CONFORMANCE_SCENARIO
// and its context (JSON) in MCP_CONFORMANCE_CONTEXT.
//
// The adapter does only what a person would do with bingo, with $BINGO
// the binary: in a fresh $HOME, it adds the server (`bingo mcp add conf
// --url URL`, or the plugin.json a person writes for a client registered
// beforehand), logs in where the scenario authorizes (`bingo mcp login
// conf`, with this program as $BROWSER: a stand-in browser that follows
// the authorization URL, since the suite's authorization servers approve
// at once), lists the plugins, and calls the scenario's tools with
// `bingo call`; where a server asks a question (elicitation), on a
// terminal (a pseudo-terminal here), answering y to fill a form in and
// Enter to each field, which takes its default. Everything else is bingo's.
//
// `adapter -browser URL` is the stand-in browser.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/creack/pty"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-browser" {
		browse(os.Args[2])
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: adapter SERVER-URL (MCP_CONFORMANCE_SCENARIO set), or adapter -browser URL")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		fmt.Fprintln(os.Stderr, "adapter:", err)
		os.Exit(1)
	}
}

// browse follows url and every redirect, as a browser would once the
// person approved: the last is bingo's loopback redirect URI.
func browse(url string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter -browser:", err)
		os.Exit(1)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// conformanceContext is what the suite says of a scenario.
type conformanceContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	ToolCalls    []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

type bingo struct {
	bin  string
	env  []string
	self string
}

func run(url, scenario string) error {
	var cc conformanceContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	home, err := os.MkdirTemp("", "bingo-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := os.Getenv("BINGO")
	if bin == "" {
		bin = "bingo"
	}
	b := bingo{bin: bin, self: self, env: append(os.Environ(), "HOME="+home, "BROWSER="+self+" -browser", "CONF_SECRET="+cc.ClientSecret)}

	if err := b.add(home, url, scenario, cc); err != nil {
		return err
	}
	if strings.HasPrefix(scenario, "auth/") {
		// A failed login is the scenario's to judge: the calls below
		// show what bingo does without it.
		_ = b.run("mcp", "login", "conf")
	}
	out, _ := b.output("plugins", "--json")
	tools := toolsOf(out)

	switch scenario {
	case "tools_call":
		return b.call("add_numbers", map[string]any{"a": 5, "b": 3})
	case "sse-retry":
		return b.call("test_reconnection", map[string]any{})
	case "elicitation-sep1034-client-defaults":
		return b.onTerminal("test_client_elicitation_defaults", map[string]any{})
	case "sep-2322-client-request-state":
		for _, t := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			_ = b.onTerminal(t, map[string]any{})
		}
	case "http-custom-headers":
		for _, c := range cc.ToolCalls {
			_ = b.call(c.Name, c.Arguments)
		}
	case "http-standard-headers":
		if len(tools) > 0 {
			_ = b.call(tools[0], map[string]any{})
		}
	case "http-invalid-tool-headers":
		for _, t := range tools {
			_ = b.call(t, map[string]any{"region": "us-west1"})
		}
	default:
		if strings.HasPrefix(scenario, "auth/") {
			return b.call("test-tool", map[string]any{})
		}
	}
	return nil
}

// add writes the server into the person's plugins: with bingo mcp add,
// or, for a client registered beforehand, as the plugin.json a person
// writes (its secret a ${VAR}).
func (b bingo) add(home, url, scenario string, cc conformanceContext) error {
	if cc.ClientID == "" && scenario != "auth/basic-cimd" {
		return b.run("mcp", "add", "conf", "--url", url)
	}
	oauth := map[string]string{}
	if cc.ClientID != "" {
		oauth["clientId"], oauth["clientSecret"] = cc.ClientID, "${CONF_SECRET}"
	}
	if scenario == "auth/basic-cimd" {
		oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
	}
	if scenario == "auth/client-credentials-basic" {
		// Unattended: the client authorizes as itself.
		oauth["grant"] = "client_credentials"
	}
	m, _ := json.Marshal(map[string]any{"name": "conf", "version": "1",
		"entry": map[string]any{"url": url, "protocol": "mcp", "oauth": oauth}})
	dir := filepath.Join(home, ".bingo", "plugins", "conf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "plugin.json"), m, 0o600)
}

// toolsOf is the server's tools, as bingo plugins --json names them.
func toolsOf(out []byte) []string {
	var plugins []struct {
		Name        string   `json:"name"`
		Contributes []string `json:"contributes"`
	}
	_ = json.Unmarshal(out, &plugins)
	var tools []string
	for _, p := range plugins {
		for _, c := range p.Contributes {
			if t, ok := strings.CutPrefix(c, "tool plugin__conf__"); ok {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

func (b bingo) command(args ...string) *exec.Cmd {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = b.env
	cmd.Stderr = os.Stderr
	return cmd
}

func (b bingo) run(args ...string) error {
	cmd := b.command(args...)
	cmd.Stdout = os.Stderr
	return cmd.Run()
}

func (b bingo) output(args ...string) ([]byte, error) { return b.command(args...).Output() }

func (b bingo) call(tool string, args map[string]any) error {
	in, _ := json.Marshal(args)
	return b.run("call", "--print", "--allow", "plugin__conf__*", "plugin__conf__"+tool, string(in))
}

// onTerminal calls tool with bingo on a pseudo-terminal, so that it asks
// the server's questions: y to fill a form in, Enter to each field (its
// default, or none).
func (b bingo) onTerminal(tool string, args map[string]any) error {
	in, _ := json.Marshal(args)
	cmd := exec.Command(b.bin, "call", "--allow", "plugin__conf__*", "plugin__conf__"+tool, string(in))
	cmd.Env = append(b.env, "TERM=dumb")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var screen bytes.Buffer
	read := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				read <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				close(read)
				return
			}
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	seen, answered := 0, 0
	for {
		select {
		case p, ok := <-read:
			if !ok {
				read = nil
				continue
			}
			screen.Write(p)
			os.Stderr.Write(p)
		case <-tick.C:
			// A question shows as a prompt ending in "> ". To a form's
			// first (whether to fill it in), y; to each field, Enter.
			if n := strings.Count(screen.String(), "> "); n > seen {
				seen = n
				text := screen.String()
				if i := strings.LastIndex(text, "> "); strings.Contains(text[answered:i], "answer y to fill them in") {
					f.Write([]byte("y\r"))
				} else {
					f.Write([]byte("\r"))
				}
				answered = len(text)
			}
		case err := <-done:
			return err
		case <-ctx.Done():
			cmd.Process.Kill()
			return ctx.Err()
		}
	}
}
