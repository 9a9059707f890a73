package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/bingo/bingo-plugin-rpc/host/openai"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func Example() {
	// A stand-in for a local server such as Ollama at http://localhost:11434/v1.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	p, err := openai.New("local", openai.Config{BaseURL: srv.URL + "/v1", Model: "llama3.2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.CloseIdleConnections()
	var events []sdk.StreamEvent
	end, err := p.Stream(context.Background(), sdk.ProviderRequest{
		Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "Say hello."}},
	}, func(e sdk.StreamEvent) { events = append(events, e) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (%s)\n", sdk.Assemble(events).Content, end.StopReason)
	// Output: Hello, world (stop)
}
