package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// standin is an OpenAI-compatible Chat Completions server on loopback
// that plays the model for a script and records every request it is
// sent, so that a script can hold what reaches the model to a size.
//
//	standin                 start it: STANDIN_URL is its base URL, and
//	                        request N's body is written to requests/N.json
//	standin size N MAX      request N's body is at most MAX bytes (! : more)
//	standin tools N MAX     its tool definitions ("tools") are at most MAX bytes
//
// The model reads the latest user message. "call: A B:JSON …" asks for
// the tools A, B, … one a response, each named exactly or by its last
// part (…__A), with its JSON input (no spaces) or {}; a tool the request
// does not offer is answered "no tool A is offered", and the turn ends.
// An input of "@" is the one the previous result names for bingo's tool
// (bingo__read_result {…}): the model reads on where a cut result says.
// Once every call has its result, it answers one line a result: its
// size and its first 60 characters. Anything else, it repeats.
func standin(ts *testscript.TestScript, neg bool, args []string) {
	switch {
	case len(args) == 0 && !neg:
		startStandin(ts)
	case len(args) == 3 && (args[0] == "size" || args[0] == "tools"):
		body := ts.ReadFile(filepath.Join("requests", args[1]+".json"))
		most, err := strconv.Atoi(args[2])
		ts.Check(err)
		got := len(body)
		if args[0] == "tools" {
			var req struct {
				Tools json.RawMessage `json:"tools"`
			}
			ts.Check(json.Unmarshal([]byte(body), &req))
			got = len(req.Tools)
		}
		ts.Logf("request %s: %s %d bytes", args[1], args[0], got)
		if (got > most) != neg {
			ts.Fatalf("request %s: %s %d bytes, want %s %d", args[1], args[0], got, map[bool]string{false: "at most", true: "more than"}[neg], most)
		}
	default:
		ts.Fatalf("usage: standin | standin size|tools N MAX")
	}
}

func startStandin(ts *testscript.TestScript) {
	dir := ts.MkAbs("requests")
	ts.Check(os.MkdirAll(dir, 0o755))
	var (
		mu sync.Mutex
		n  int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.Error(w, "want a POST to /chat/completions", http.StatusBadRequest)
			return
		}
		mu.Lock()
		n++
		os.WriteFile(filepath.Join(dir, strconv.Itoa(n)+".json"), body, 0o644)
		mu.Unlock()
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range req.answer() {
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	ts.Defer(srv.Close)
	ts.Setenv("STANDIN_URL", srv.URL+"/v1")
}

// chatRequest is what the stand-in reads of a request.
type chatRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// readOn finds, in a cut result, the input to read on with.
var readOn = regexp.MustCompile(`bingo__read_result (\{[^}]*\})`)

// answer is the stand-in model's response, as stream chunks.
func (req chatRequest) answer() []any {
	text := func(s string) []any {
		return []any{map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": s}, "finish_reason": "stop"}}}}
	}
	latest, results := "", []string{}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			latest, results = m.Content, nil
		case "tool":
			results = append(results, m.Content)
		}
	}
	wanted, ok := strings.CutPrefix(latest, "call: ")
	if !ok {
		return text("you said: " + latest)
	}
	words := strings.Fields(wanted)
	if len(results) == len(words) {
		var b strings.Builder
		for i, r := range results {
			head := []rune(strings.ReplaceAll(r, "\n", " "))
			if len(head) > 60 {
				head = head[:60]
			}
			fmt.Fprintf(&b, "result %d: %d bytes: %s\n", i+1, len(r), string(head))
		}
		return text(b.String())
	}
	name, input, _ := strings.Cut(words[len(results)], ":")
	switch {
	case input == "":
		input = "{}"
	case input == "@" && len(results) > 0:
		if m := readOn.FindStringSubmatch(results[len(results)-1]); m != nil {
			input = m[1]
		}
	}
	for _, t := range req.Tools {
		if n := t.Function.Name; n == name || strings.HasSuffix(n, "__"+name) {
			call := map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", len(results)+1), "type": "function",
				"function": map[string]any{"name": n, "arguments": input}}
			return []any{map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"tool_calls": []any{call}}, "finish_reason": "tool_calls"}}}}
		}
	}
	return text("no tool " + name + " is offered")
}
