package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer starts a loopback server that is closed, with its client's idle
// connections, when the test ends.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newProvider returns a provider for srv, with OPENAI_API_KEY=sk-test in its
// environment; edit changes the config first.
func newProvider(t *testing.T, srv *httptest.Server, edit func(*Config)) *Provider {
	t.Helper()
	cfg := Config{
		BaseURL:    srv.URL + "/v1",
		Model:      "gpt-test",
		APIKeyEnv:  "OPENAI_API_KEY",
		HTTPClient: srv.Client(),
		Getenv:     mapEnv(map[string]string{"OPENAI_API_KEY": "sk-test"}),
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := New("oai", cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// sseWriter writes the streaming format as the API does: one
// "data: <json>\n\n" event per chunk, flushed at once.
type sseWriter struct {
	t *testing.T
	w http.ResponseWriter
}

func startSSE(t *testing.T, w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{t: t, w: w}
}

// raw writes s as is and flushes.
func (s *sseWriter) raw(text string) {
	if _, err := io.WriteString(s.w, text); err != nil {
		return // the client went away; the test decides what that means
	}
	s.w.(http.Flusher).Flush()
}

// chunk writes one chat.completion.chunk whose only choice has delta and
// finish reason (finish "" is sent as null).
func (s *sseWriter) chunk(delta map[string]any, finish string) {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	s.data(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
		"model": "gpt-test", "choices": []any{choice},
	})
}

func (s *sseWriter) data(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Errorf("marshal: %v", err)
		return
	}
	s.raw("data: " + string(b) + "\n\n")
}

func (s *sseWriter) done() { s.raw("data: [DONE]\n\n") }

func text(s string) map[string]any { return map[string]any{"content": s} }

func call(index int, id, name, args string) map[string]any {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
		tc["function"].(map[string]any)["name"] = name
	}
	return map[string]any{"tool_calls": []any{tc}}
}

// stream runs p.Stream and collects the events.
func stream(ctx context.Context, p *Provider, req sdk.ProviderRequest) ([]sdk.StreamEvent, sdk.StreamEnd, error) {
	var events []sdk.StreamEvent
	end, err := p.Stream(ctx, req, func(e sdk.StreamEvent) { events = append(events, e) })
	return events, end, err
}

var hello = sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "hi"}}}

// checkErrLine asserts err is one line that names the provider.
func checkErrLine(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	msg := err.Error()
	t.Log(msg)
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, `openai provider "oai": `) {
		t.Errorf("error does not name the provider: %q", msg)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		cfg  Config
		want string // "" = valid
	}{
		{"ok", "x", Config{BaseURL: "http://localhost:11434/v1", Model: "llama3"}, ""},
		{"no id", "", Config{BaseURL: "http://localhost:11434/v1", Model: "m"}, "an id is required"},
		{"no base URL", "x", Config{Model: "m"}, `openai provider "x": baseURL is required`},
		{"no model", "x", Config{BaseURL: "https://api.openai.com/v1"}, `openai provider "x": model is required`},
		{"no scheme", "x", Config{BaseURL: "localhost:11434/v1", Model: "m"}, "is not an http(s) URL"},
		{"wrong scheme", "x", Config{BaseURL: "ftp://example.com/v1", Model: "m"}, "is not an http(s) URL"},
		{"no host", "x", Config{BaseURL: "http:///v1", Model: "m"}, "is not an http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.id, tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if p.ID() != tc.id {
					t.Errorf("ID() = %q, want %q", p.ID(), tc.id)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEndpointPath(t *testing.T) {
	for _, base := range []string{"/v1", "/v1/", "/v1/chat/completions"} {
		t.Run(base, func(t *testing.T) {
			paths := make(chan string, 1)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				paths <- r.Method + " " + r.URL.Path
				s := startSSE(t, w)
				s.chunk(text("ok"), "stop")
				s.done()
			})
			p := newProvider(t, srv, func(c *Config) { c.BaseURL = srv.URL + base })
			if _, _, err := stream(t.Context(), p, hello); err != nil {
				t.Fatal(err)
			}
			if got := <-paths; got != "POST /v1/chat/completions" {
				t.Errorf("request went to %q", got)
			}
		})
	}
}

func TestStreamText(t *testing.T) {
	answer := "The quick brown fox jumps over the lazy dog, and then — ünïcödé 🦊 — it rests."
	var pieces []string
	runes := []rune(answer) // JSON strings carry whole characters
	for i := 0; i < len(runes); i += 3 {
		pieces = append(pieces, string(runes[i:min(i+3, len(runes))]))
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.raw(": keep-alive comment\n\n")
		s.chunk(map[string]any{"role": "assistant", "content": ""}, "")
		for i, piece := range pieces {
			switch i % 3 {
			case 1: // other fields and CRLF line endings are tolerated
				b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": text(piece)}}})
				s.raw("event: message\r\nid: " + fmt.Sprint(i) + "\r\ndata: " + string(b) + "\r\n\r\n")
			case 2: // "data:" without the space is the same field
				b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": text(piece)}}})
				s.raw("data:" + string(b) + "\n\n")
			default:
				s.chunk(text(piece), "")
			}
		}
		s.chunk(map[string]any{}, "stop")
		s.data(map[string]any{"choices": []any{}, "usage": map[string]any{"total_tokens": 9}})
		s.done()
	})
	p := newProvider(t, srv, nil)
	events, end, err := stream(t.Context(), p, hello)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(events) != len(pieces) {
		t.Errorf("got %d events, want one per piece (%d)", len(events), len(pieces))
	}
	for i, e := range events {
		if e.Kind != sdk.EventText || e.ToolCall != nil {
			t.Errorf("event %d = %+v, want text", i, e)
		}
	}
	msg := sdk.Assemble(events)
	if msg.Content != answer || len(msg.ToolCalls) != 0 {
		t.Errorf("assembled %+v, want content %q", msg, answer)
	}
	if end.StopReason != "stop" {
		t.Errorf("StopReason = %q, want stop", end.StopReason)
	}
}

func TestStreamToolCalls(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(map[string]any{"role": "assistant", "content": "Let me look."}, "")
		s.chunk(call(0, "call_a", "get_weather", ""), "")
		s.chunk(call(0, "", "", `{"ci`), "")
		s.chunk(call(0, "", "", `ty": "Pa`), "")
		s.chunk(call(1, "call_b", "get_time", `{"tz"`), "")
		s.chunk(call(0, "", "", `ris"}`), "")
		s.chunk(call(1, "", "", `: "UTC"`), "")
		s.chunk(call(1, "", "", `}`), "")
		s.chunk(map[string]any{}, "tool_calls")
		s.done()
	})
	p := newProvider(t, srv, nil)
	events, end, err := stream(t.Context(), p, hello)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if end.StopReason != "tool_calls" {
		t.Errorf("StopReason = %q, want tool_calls", end.StopReason)
	}
	first := events[1].ToolCall
	if events[1].Kind != sdk.EventToolCall || first == nil || *first != (sdk.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather"}) {
		t.Errorf("first call event = %+v", events[1])
	}
	msg := sdk.Assemble(events)
	if msg.Content != "Let me look." {
		t.Errorf("content = %q", msg.Content)
	}
	want := []sdk.ToolCallRequest{
		{ID: "call_a", Name: "get_weather", Input: json.RawMessage(`{"city": "Paris"}`)},
		{ID: "call_b", Name: "get_time", Input: json.RawMessage(`{"tz": "UTC"}`)},
	}
	if len(msg.ToolCalls) != len(want) {
		t.Fatalf("assembled calls %+v, want %d", msg.ToolCalls, len(want))
	}
	for i, c := range msg.ToolCalls {
		if !json.Valid(c.Input) {
			t.Errorf("call %d input %s is not valid JSON", i, c.Input)
		}
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Input) != string(want[i].Input) {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, c.ID, c.Name, c.Input, want[i].ID, want[i].Name, want[i].Input)
		}
	}
}

// Some servers leave out the call index and send the arguments as an
// object, one whole call per chunk.
func TestStreamToolCallsWithoutIndex(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"name":"a","arguments":{"x":1}}}]}}]}` + "\n\n")
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","function":{"name":"b","arguments":"{\"y\":"}}]}}]}` + "\n\n")
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"2}"}}]}}]}` + "\n\n")
		s.chunk(map[string]any{}, "stop")
		s.done()
	})
	p := newProvider(t, srv, nil)
	events, _, err := stream(t.Context(), p, hello)
	if err != nil {
		t.Fatal(err)
	}
	msg := sdk.Assemble(events)
	got := fmt.Sprint(msg.ToolCalls)
	want := fmt.Sprint([]sdk.ToolCallRequest{
		{ID: "c1", Name: "a", Input: json.RawMessage(`{"x":1}`)},
		{ID: "c2", Name: "b", Input: json.RawMessage(`{"y":2}`)},
	})
	if got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
}

func TestToolCallIndexOutOfRange(t *testing.T) {
	for _, idx := range []int{-1, maxCallIndex} {
		t.Run(fmt.Sprint(idx), func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := startSSE(t, w)
				s.chunk(call(idx, "c", "n", "{}"), "")
				s.done()
			})
			_, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			checkErrLine(t, err, "out of range")
		})
	}
}

// captured is what the server saw of one request.
type captured struct {
	header http.Header
	body   map[string]any
}

func capturingServer(t *testing.T) (*httptest.Server, chan captured) {
	got := make(chan captured, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		got <- captured{header: r.Header.Clone(), body: body}
		s := startSSE(t, w)
		s.chunk(text("ok"), "stop")
		s.done()
	})
	return srv, got
}

// jsonOf decodes s into the generic shape the server decodes to.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func TestRequestMapping(t *testing.T) {
	srv, got := capturingServer(t)
	p := newProvider(t, srv, nil)
	req := sdk.ProviderRequest{
		System: "You are terse.",
		Messages: []sdk.Message{
			{Role: sdk.RoleUser, Content: "Weather in Paris, and the time?"},
			{Role: sdk.RoleAssistant, Content: "Checking.", ToolCalls: []sdk.ToolCallRequest{
				{ID: "call_a", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
				{ID: "call_b", Name: "get_time", Input: nil},
			}},
			{Role: sdk.RoleTool, ToolCallID: "call_a", Content: "18°C"},
			{Role: sdk.RoleTool, ToolCallID: "call_b", Content: "12:00"},
			// A call whose arguments were not JSON, as sdk.Assemble keeps it.
			{Role: sdk.RoleAssistant, ToolCalls: []sdk.ToolCallRequest{
				{ID: "call_c", Name: "get_time", Input: json.RawMessage(`"{\"tz\": UTC"`)},
			}},
			{Role: sdk.RoleTool, ToolCallID: "call_c", Content: "input is not JSON"},
			{Role: sdk.RoleSystem, Content: "Be brief."},
		},
		Tools: []sdk.ToolSpec{
			{Name: "get_weather", Description: "Weather for a city", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", Description: "The time"},
		},
	}
	if _, _, err := stream(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	c := <-got
	if h := c.header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want Bearer sk-test", h)
	}
	if h := c.header.Get("Content-Type"); h != "application/json" {
		t.Errorf("Content-Type = %q", h)
	}
	want := jsonOf(t, `{
		"model": "gpt-test",
		"stream": true,
		"messages": [
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": "Weather in Paris, and the time?"},
			{"role": "assistant", "content": "Checking.", "tool_calls": [
				{"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
				{"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_a", "content": "18°C"},
			{"role": "tool", "tool_call_id": "call_b", "content": "12:00"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_c", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": UTC"}}
			]},
			{"role": "tool", "tool_call_id": "call_c", "content": "input is not JSON"},
			{"role": "system", "content": "Be brief."}
		],
		"tools": [
			{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
				"parameters": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			{"type": "function", "function": {"name": "get_time", "description": "The time", "parameters": {"type": "object"}}}
		]
	}`)
	if !reflect.DeepEqual(c.body, want) {
		gotJSON, _ := json.MarshalIndent(c.body, "", "  ")
		t.Errorf("request body:\n%s", gotJSON)
	}
}

func TestRequestModelNoKeyNoTools(t *testing.T) {
	srv, got := capturingServer(t)
	p := newProvider(t, srv, func(c *Config) { c.APIKeyEnv = "" })
	req := hello
	req.Model = "llama3.2"
	if _, _, err := stream(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	c := <-got
	if h, ok := c.header["Authorization"]; ok {
		t.Errorf("Authorization sent without APIKeyEnv: %q", h)
	}
	if c.body["model"] != "llama3.2" {
		t.Errorf("model = %v, want the request's llama3.2", c.body["model"])
	}
	if _, ok := c.body["tools"]; ok {
		t.Errorf("tools sent for a request with none: %v", c.body["tools"])
	}
	if m := c.body["messages"].([]any); len(m) != 1 {
		t.Errorf("messages = %v, want only the user's (no empty system message)", m)
	}
}

// A request's bound on tokens is sent as the server wants it: OpenAI's own
// API as max_completion_tokens, any other server as max_tokens; none, and
// neither is sent. The answer names the model the server says answered,
// not the one configured.
func TestRequestMaxTokensAndModel(t *testing.T) {
	for _, tc := range []struct {
		name, baseURL string
		maxTokens     int
		want, not     string
	}{
		{"compatible", "", 50, "max_tokens", "max_completion_tokens"},
		{"openai", "https://api.openai.com/v1", 50, "max_completion_tokens", "max_tokens"},
		{"unbounded", "", 0, "", "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := capturingServer(t)
			p := newProvider(t, srv, func(c *Config) {
				c.Model = "an-alias"
				if tc.baseURL != "" {
					c.BaseURL = tc.baseURL
					c.HTTPClient = &http.Client{Transport: toServer{srv}}
				}
			})
			req := hello
			req.MaxTokens = tc.maxTokens
			_, end, err := stream(t.Context(), p, req)
			if err != nil {
				t.Fatal(err)
			}
			c := <-got
			if tc.want != "" && c.body[tc.want] != float64(tc.maxTokens) {
				t.Errorf("%s = %v, want %d; body %v", tc.want, c.body[tc.want], tc.maxTokens, c.body)
			}
			if _, ok := c.body[tc.not]; ok {
				t.Errorf("%s sent: %v", tc.not, c.body)
			}
			if end.Model != "gpt-test" {
				t.Errorf("end.Model = %q, want the server's gpt-test", end.Model)
			}
		})
	}
}

// toServer sends every request to srv, whatever host it names.
type toServer struct{ srv *httptest.Server }

func (s toServer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	u, _ := url.Parse(s.srv.URL)
	r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
	return s.srv.Client().Transport.RoundTrip(r)
}

func TestRequestRefused(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request that cannot be built reached the server")
	})
	p := newProvider(t, srv, nil)
	_, _, err := stream(t.Context(), p, sdk.ProviderRequest{Messages: []sdk.Message{{Role: "robot", Content: "x"}}})
	checkErrLine(t, err, `role "robot"`)
	_, _, err = stream(t.Context(), p, sdk.ProviderRequest{Tools: []sdk.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{nope`)}}})
	checkErrLine(t, err, `tool "t"`, "not valid JSON")
}

func TestMissingAPIKey(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request without its API key reached the server")
	})
	p := newProvider(t, srv, func(c *Config) { c.Getenv = mapEnv(nil) })
	_, _, err := stream(t.Context(), p, hello)
	if !errors.Is(err, ErrMissingAPIKey) {
		t.Fatalf("err = %v, want ErrMissingAPIKey", err)
	}
	checkErrLine(t, err, "set OPENAI_API_KEY")
}

func TestHTTPStatus(t *testing.T) {
	long := "<html><body>" + strings.Repeat("Bad gateway. ", 200) + "</body></html>"
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		keyEnv   string
		wantMsg  string
		contains []string
	}{
		{"401 OpenAI JSON", 401,
			`{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"OPENAI_API_KEY", "Incorrect API key provided: sk-test.", []string{"HTTP 401 Unauthorized", "check the API key in $OPENAI_API_KEY"}},
		{"401 without a key configured", 401, `{"error":{"message":"missing key"}}`,
			"", "missing key", []string{"set apiKeyEnv"}},
		{"404 Ollama", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			"OPENAI_API_KEY", `model "llama9" not found, try pulling it first`, []string{"HTTP 404 Not Found", "check the base URL"}},
		{"400 vLLM", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`,
			"OPENAI_API_KEY", "This model's maximum context length is 4096 tokens.", []string{"HTTP 400 Bad Request"}},
		{"429", 429, `{"error":{"message":"Rate limit reached"}}`,
			"OPENAI_API_KEY", "Rate limit reached", []string{"HTTP 429", "wait"}},
		{"502 HTML", 502, long, "OPENAI_API_KEY", "", []string{"HTTP 502 Bad Gateway", "<html><body>Bad gateway.", "…", "try again later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			p := newProvider(t, srv, func(c *Config) { c.APIKeyEnv = tc.keyEnv })
			events, _, err := stream(t.Context(), p, hello)
			if len(events) != 0 {
				t.Errorf("events emitted for an HTTP error: %v", events)
			}
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StatusError", err)
			}
			if se.StatusCode != tc.status {
				t.Errorf("StatusCode = %d", se.StatusCode)
			}
			if tc.wantMsg != "" && se.Message != tc.wantMsg {
				t.Errorf("Message = %q, want %q", se.Message, tc.wantMsg)
			}
			if n := len([]rune(se.Message)); n > maxMessage+1 {
				t.Errorf("Message is %d runes, want it truncated", n)
			}
			checkErrLine(t, err, tc.contains...)
		})
	}
}

func TestErrorMidStream(t *testing.T) {
	for _, tc := range []struct {
		name, chunk string
		want        StreamError
	}{
		{"OpenAI", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}`,
			StreamError{Provider: "oai", Message: "The server had an error while processing your request.", Type: "server_error"}},
		{"string", `{"error":"out of memory"}`, StreamError{Provider: "oai", Message: "out of memory"}},
		{"vLLM", `{"object":"error","message":"engine dead","type":"InternalServerError","code":500}`,
			StreamError{Provider: "oai", Message: "engine dead", Type: "InternalServerError", Code: "500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := startSSE(t, w)
				s.chunk(text("Half an "), "")
				s.chunk(text("answer"), "")
				s.raw("data: " + tc.chunk + "\n\n")
				s.chunk(text(" that must not be read"), "")
				s.done()
			})
			events, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if got := sdk.Assemble(events).Content; got != "Half an answer" {
				t.Errorf("emitted %q before the error, want %q", got, "Half an answer")
			}
			var se *StreamError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StreamError", err)
			}
			if *se != tc.want {
				t.Errorf("StreamError = %+v, want %+v", *se, tc.want)
			}
			checkErrLine(t, err, tc.want.Message, "try again")
		})
	}
}

func TestTruncated(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(s *sseWriter)
	}{
		{"clean close without DONE", func(s *sseWriter) {}},
		{"connection cut", func(s *sseWriter) { panic(http.ErrAbortHandler) }},
		{"cut mid-line", func(s *sseWriter) {
			s.raw(`data: {"choices":[{"index":0,"delta":{"content":"x"`)
			panic(http.ErrAbortHandler)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := startSSE(t, w)
				s.chunk(text("partial"), "")
				tc.end(s)
			})
			events, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if len(events) != 1 {
				t.Errorf("events = %v, want the one before the cut", events)
			}
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("err = %v, want ErrTruncated", err)
			}
			checkErrLine(t, err, "incomplete")
		})
	}
}

// A finish_reason is a complete answer even when the server leaves out
// [DONE] or its closing blank line.
func TestFinishWithoutDone(t *testing.T) {
	for name, tail := range map[string]string{
		"no DONE":            "",
		"DONE without blank": "data: [DONE]\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := startSSE(t, w)
				s.chunk(text("all"), "length")
				s.raw(tail)
			})
			events, end, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if err != nil {
				t.Fatal(err)
			}
			if end.StopReason != "length" || sdk.Assemble(events).Content != "all" {
				t.Errorf("end = %+v, events = %v", end, events)
			}
		})
	}
}

func TestMalformedChunk(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":   `{"choices":[{"index":0,"delta":{"content":"x"}`,
		"wrong type": `{"choices":"many"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := startSSE(t, w)
				s.raw("data: " + data + "\n\n")
				s.done()
			})
			_, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			checkErrLine(t, err, "not a valid chat completion chunk", "OpenAI-compatible")
		})
	}
}

func TestNotStreamed(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		check      func(error) bool
	}{
		{"completion", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`,
			func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"error", `{"error":{"message":"overloaded"}}`,
			func(err error) bool { var se *StreamError; return errors.As(err, &se) && se.Message == "overloaded" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.body)
			})
			_, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
			if !tc.check(err) {
				t.Fatalf("err = %v", err)
			}
			checkErrLine(t, err)
		})
	}
}

// streamWithin runs Stream and fails the test if it has not returned within
// limit: the server in these tests would otherwise stall for ever.
func streamWithin(t *testing.T, limit time.Duration, ctx context.Context, p *Provider, emit func(sdk.StreamEvent)) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := p.Stream(ctx, hello, emit)
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Stream returned after %v", time.Since(start))
		return err
	case <-time.After(limit):
		t.Fatalf("Stream still running %v after the cancel", limit)
		return nil
	}
}

func TestCancelWhileStreaming(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(text("first"), "")
		select { // stall
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	p := newProvider(t, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := streamWithin(t, 10*time.Second, ctx, p, func(e sdk.StreamEvent) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	checkErrLine(t, err)
}

func TestCancelBeforeHeaders(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	p := newProvider(t, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-entered
		cancel()
	}()
	err := streamWithin(t, 10*time.Second, ctx, p, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	checkErrLine(t, err)
}

func TestCancelledBeforeStart(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("a cancelled request reached the server")
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := stream(ctx, newProvider(t, srv, nil), hello)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLongLines(t *testing.T) {
	big := strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 1<<15) // 1 MiB
	args, _ := json.Marshal(map[string]string{"content": big})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(text(big), "")
		s.chunk(call(0, "call_w", "write", string(args)), "")
		s.chunk(map[string]any{}, "tool_calls")
		s.done()
	})
	events, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
	if err != nil {
		t.Fatal(err)
	}
	msg := sdk.Assemble(events)
	if msg.Content != big {
		t.Errorf("content is %d bytes, want %d", len(msg.Content), len(big))
	}
	if len(msg.ToolCalls) != 1 || string(msg.ToolCalls[0].Input) != string(args) {
		t.Errorf("tool call input lost (%d calls)", len(msg.ToolCalls))
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := New("oai", Config{BaseURL: "http://" + addr + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseIdleConnections()
	_, _, err = stream(t.Context(), p, hello)
	checkErrLine(t, err, "cannot reach http://"+addr+"/v1/chat/completions", "check the base URL")
}

// The default client bounds connecting and the TLS handshake, never the
// headers or the body (Config.Deadlines bound those), and works.
func TestDefaultClient(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(text("hi"), "stop")
		s.done()
	})
	p := newProvider(t, srv, func(c *Config) { c.HTTPClient = nil })
	defer p.CloseIdleConnections()
	if p.client.Timeout != 0 {
		t.Errorf("client.Timeout = %v: it would cut long answers", p.client.Timeout)
	}
	tr := p.client.Transport.(*http.Transport)
	if tr.TLSHandshakeTimeout <= 0 || tr.DialContext == nil {
		t.Errorf("default transport lacks connect timeouts: %+v", tr)
	}
	if tr.ResponseHeaderTimeout != 0 {
		t.Errorf("ResponseHeaderTimeout = %v: it would cut a first answer that deadlines.provider allows", tr.ResponseHeaderTimeout)
	}
	events, _, err := stream(t.Context(), p, hello)
	if err != nil || sdk.Assemble(events).Content != "hi" {
		t.Fatalf("events %v, err %v", events, err)
	}
}

// A provider is safe for concurrent use.
func TestConcurrentStreams(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Messages []struct{ Content string } }
		json.NewDecoder(r.Body).Decode(&body)
		s := startSSE(t, w)
		s.chunk(text("echo "+body.Messages[0].Content), "stop")
		s.done()
	})
	p := newProvider(t, srv, nil)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			q := fmt.Sprint(i)
			events, _, err := stream(t.Context(), p, sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: q}}})
			if err == nil && sdk.Assemble(events).Content != "echo "+q {
				err = fmt.Errorf("request %s got %q", q, sdk.Assemble(events).Content)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A refusal is what the model said: it is text, not silence.
func TestRefusalIsText(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help"}, "")
		s.chunk(map[string]any{"refusal": " with that."}, "stop")
		s.done()
	})
	events, _, err := stream(t.Context(), newProvider(t, srv, nil), hello)
	if err != nil {
		t.Fatal(err)
	}
	if got := sdk.Assemble(events).Content; got != "I can't help with that." {
		t.Errorf("content = %q", got)
	}
}

// [DONE] ends the answer even if the server keeps the body open after it.
func TestDoneThenStall(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(t, w)
		s.chunk(text("ok"), "stop")
		s.done()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	if err := streamWithin(t, 10*time.Second, t.Context(), newProvider(t, srv, nil), nil); err != nil {
		t.Fatal(err)
	}
}
