package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
)

// The built-in OpenAI-compatible provider, chosen in settings, drives a
// whole turn: a loopback server speaking the streaming format asks for a
// plugin's tool, then answers from its result.
func TestTurnWithTheBuiltInProvider(t *testing.T) {
	var requests []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		json.Unmarshal(body, &req)
		requests = append(requests, req)
		w.Header().Set("Content-Type", "text/event-stream")
		msgs := req["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		var chunks []string
		if last["role"] == "tool" {
			chunks = []string{
				`{"choices":[{"delta":{"content":"the tool said "}}]}`,
				fmt.Sprintf(`{"choices":[{"delta":{"content":%q},"finish_reason":"stop"}]}`, last["content"]),
			}
		} else {
			chunks = []string{
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"plugin__testplugin__echo","arguments":"{\"te"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"xt\":\"hi\"}"}}]},"finish_reason":"tool_calls"}]}`,
			}
		}
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	h, _ := newTestHost(t, withSettings(func(s *settings.Settings) {
		s.Provider.OpenAI = &settings.OpenAI{BaseURL: srv.URL, Model: "test-model"}
		s.Permissions.Allow = []string{"plugin__testplugin__echo"}
	}), testPlugin)
	res, err := h.Turn(context.Background(), "say hi", &fakeUI{})
	if err != nil || res.Text != "the tool said hi" || res.Steps != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if len(requests) != 2 || requests[0]["model"] != "test-model" {
		t.Fatalf("requests = %v", requests)
	}
	tools, _ := json.Marshal(requests[0]["tools"])
	if !strings.Contains(string(tools), `"name":"plugin__testplugin__echo"`) {
		t.Fatalf("the plugin's tools must be offered to the model: %s", tools)
	}
	srv.CloseClientConnections()
}
