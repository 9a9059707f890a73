package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// chunk is one streamed chat.completion.chunk, plus the error shapes a
// server may send in its place.
type chunk struct {
	Model   string        `json:"model"` // the model that answers, as the API names it
	Choices []chunkChoice `json:"choices"`
	// Error and Object say the chunk is an error (see parseAPIError).
	Error  json.RawMessage `json:"error"`
	Object string          `json:"object"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string          `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	// Index is a pointer because some servers leave it out.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON string piece in the API; a few servers send
		// the whole arguments object instead.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// maxCallIndex bounds a tool call index: sdk.Assemble allocates up to the
// index, so a hostile or broken server must not name call 1e9.
const maxCallIndex = 1024

// callIndexer gives each tool call delta its call index. The API always
// sends one; for a server that does not, a delta with a new id starts the
// next call and a delta without one continues the last.
type callIndexer struct {
	next, last int
	started    bool
}

func (c *callIndexer) index(d toolCallDelta) int {
	var i int
	switch {
	case d.Index != nil:
		i = *d.Index
	case d.ID != "" || !c.started:
		i = c.next
	default:
		i = c.last
	}
	c.last, c.started = i, true
	if i >= c.next {
		c.next = i + 1
	}
	return i
}

// readStream parses the event stream, emitting as it goes; alive hears of
// each event that carries data, the server's sign of life (a comment, a
// keep-alive, is none).
func (p *Provider) readStream(ctx context.Context, body io.Reader, emit func(sdk.StreamEvent), alive func()) (sdk.StreamEnd, error) {
	sse := newSSEReader(body, maxEvent)
	var end sdk.StreamEnd
	finished := false
	var calls callIndexer
	for {
		data, err := sse.next()
		if err != nil {
			if ctx.Err() != nil {
				return end, p.stopped(ctx)
			}
			if err == io.EOF {
				if finished {
					// A finish_reason and then a clean end: complete, even
					// though the server left out [DONE].
					return end, nil
				}
				return end, fmt.Errorf("openai provider %q: %w: the server closed the stream with neither [DONE] nor a finish_reason; the answer is incomplete, try again", p.id, ErrTruncated)
			}
			if errors.Is(err, errEventTooLarge) {
				return end, fmt.Errorf("openai provider %q: %w: %v", p.id, ErrMalformed, err)
			}
			return end, fmt.Errorf("openai provider %q: %w: the connection broke (%v); the answer is incomplete, try again", p.id, ErrTruncated, err)
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		alive()
		if string(data) == "[DONE]" {
			return end, nil
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return end, fmt.Errorf("openai provider %q: %w: a stream chunk is not a valid chat completion chunk (%v): %s; is the base URL an OpenAI-compatible endpoint?", p.id, ErrMalformed, err, render.Brief(string(data), maxMessage))
		}
		if (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error" {
			if ae, ok := parseAPIError(data); ok {
				return end, &StreamError{Provider: p.id, Message: ae.Message, Type: ae.Type, Code: ae.Code}
			}
		}
		if end.Model == "" {
			end.Model = c.Model
		}
		for _, ch := range c.Choices {
			// Only the first choice: n > 1 is never requested.
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				emit(sdk.StreamEvent{Kind: sdk.EventText, Text: ch.Delta.Content})
			}
			if ch.Delta.Refusal != "" {
				emit(sdk.StreamEvent{Kind: sdk.EventText, Text: ch.Delta.Refusal})
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := calls.index(tc)
				if i < 0 || i >= maxCallIndex {
					return end, fmt.Errorf("openai provider %q: %w: tool call index %d is out of range", p.id, ErrMalformed, i)
				}
				d := &sdk.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, ArgumentsDelta: argumentsPiece(tc.Function.Arguments)}
				if d.ID == "" && d.Name == "" && d.ArgumentsDelta == "" {
					continue
				}
				emit(sdk.StreamEvent{Kind: sdk.EventToolCall, ToolCall: d})
			}
			if ch.FinishReason != "" {
				end.StopReason = ch.FinishReason
				finished = true
			}
		}
	}
}

// argumentsPiece is the text of an arguments delta: the string's contents
// in the API's shape, or the raw JSON when a server sent an object.
func argumentsPiece(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
