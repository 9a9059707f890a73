package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
)

var (
	// ErrMissingAPIKey is wrapped by the error Stream returns when
	// Config.APIKeyEnv names an environment variable that is unset or empty.
	ErrMissingAPIKey = errors.New("API key not set")
	// ErrTruncated is wrapped by the error Stream returns when the response
	// stream ended before it was complete: the connection broke, or the body
	// ended with neither "data: [DONE]" nor a finish_reason.
	ErrTruncated = errors.New("response stream ended early")
	// ErrMalformed is wrapped by the error Stream returns when the server's
	// answer is not the OpenAI streaming format: a chunk that is not valid
	// JSON, an impossible tool call index, an event over the size cap, or a
	// JSON answer to a streaming request.
	ErrMalformed = errors.New("malformed response")
)

// StatusError is an HTTP answer other than 200 OK.
type StatusError struct {
	// Provider is the provider's id.
	Provider string
	// StatusCode is the HTTP status code.
	StatusCode int
	// Message is the API's error.message, or the start of the body when it
	// is not JSON; one line, truncated. It may be empty.
	Message string
	// hint says what to do; it depends on the status and the config.
	hint string
}

// Error is one line naming the provider, the status, the server's message
// and what to do.
func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai provider %q: HTTP %d", e.Provider, e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.hint != "" {
		b.WriteString("; " + e.hint)
	}
	return b.String()
}

// StreamError is an error the server reported with a 200 OK: a chunk
// {"error": {...}} in the middle of the stream, or a JSON error document in
// place of the stream. Whatever was emitted before it is incomplete.
type StreamError struct {
	// Provider is the provider's id.
	Provider string
	// Message is the server's error message, one line, truncated.
	Message string
	// Type and Code are the server's error type and code when it gave them.
	Type, Code string
}

// Error is one line naming the provider and the server's message.
func (e *StreamError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai provider %q: the server reported an error instead of finishing the answer: %s", e.Provider, e.Message)
	var tags []string
	for _, t := range []string{e.Type, e.Code} {
		if t != "" {
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 {
		b.WriteString(" (" + strings.Join(tags, ", ") + ")")
	}
	b.WriteString("; the answer is incomplete, try again")
	return b.String()
}

// maxMessage caps how much of a server's error text goes into an error, so
// one HTML error page does not become a screenful.
const maxMessage = 300

// apiError is the error object of the OpenAI format, and of the shapes its
// imitators use: {"error": {"message", "type", "code"}}, {"error": "text"}
// (Ollama's native errors), and a top-level {"object": "error", "message"}
// (older vLLM).
type apiError struct {
	Message string
	Type    string
	Code    string
}

// parseAPIError finds an error in a JSON body or chunk. ok is false when
// there is none.
func parseAPIError(data []byte) (apiError, bool) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(data, &top) != nil {
		return apiError{}, false
	}
	if raw := top.Error; len(raw) > 0 && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return apiError{Message: render.Brief(s, maxMessage)}, true
		}
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(raw, &obj) == nil {
			msg := obj.Message
			if msg == "" {
				msg = string(raw)
			}
			return apiError{Message: render.Brief(msg, maxMessage), Type: render.Brief(obj.Type, maxMessage), Code: rawCode(obj.Code)}, true
		}
		return apiError{Message: render.Brief(string(raw), maxMessage)}, true
	}
	if top.Object == "error" {
		return apiError{Message: render.Brief(top.Message, maxMessage), Type: render.Brief(top.Type, maxMessage), Code: rawCode(top.Code)}, true
	}
	return apiError{}, false
}

// rawCode renders an error code that servers send as a string or a number.
func rawCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return render.Brief(s, maxMessage)
	}
	return render.Brief(string(raw), maxMessage)
}

// statusHint says what to do about an HTTP status.
func (p *Provider) statusHint(code int) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if p.keyEnv == "" {
			return "the server wants an API key: set apiKeyEnv in the provider config to the environment variable that holds it"
		}
		return "check the API key in $" + p.keyEnv
	case code == http.StatusNotFound:
		return fmt.Sprintf("check the base URL (%s) and the model name", p.baseURL)
	case code == http.StatusTooManyRequests:
		return "rate limited or out of quota: wait, or check the account's plan"
	case code >= 500:
		return "the server failed: try again later"
	case code >= 400:
		return "the server refused the request: check the model name and the server's requirements"
	}
	return "expected 200 OK from a chat completions endpoint: check the base URL"
}
