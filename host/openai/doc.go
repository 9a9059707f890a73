// Package openai is a built-in model provider that speaks the
// OpenAI-compatible Chat Completions API with streaming. One Provider covers
// hosted APIs (https://api.openai.com/v1 and the many services that copy its
// wire format) and local servers that expose the same endpoint: Ollama
// (http://localhost:11434/v1), llama.cpp's llama-server, vLLM.
//
// Use:
//
//	p, err := openai.New("gpt", openai.Config{
//		BaseURL:   "https://api.openai.com/v1",
//		Model:     "gpt-4o-mini",
//		APIKeyEnv: "OPENAI_API_KEY",
//	})
//	if err != nil { ... }
//	end, err := p.Stream(ctx, req, func(e sdk.StreamEvent) { ... })
//
// # What it supports
//
//   - One streamed POST to BaseURL + "/chat/completions" per Stream call;
//     the request's Model overrides Config.Model, its MaxTokens bounds the
//     answer.
//   - Messages, tools (each a "function" tool) and the answer (text and
//     toolCall events for sdk.Assemble, then StreamEnd) map one to one;
//     docs/design.md ("host/openai") has each mapping.
//   - The API key is read from Config.APIKeyEnv at each request, sent as
//     "Authorization: Bearer <key>"; never in the configuration itself.
//
// # Errors
//
// Every error is one line that starts with `openai provider "<id>":` and
// says what to do. Callers can test them: *StatusError (an HTTP answer other
// than 200, carrying the API's error.message), *StreamError (the server
// reported an error in the middle of the stream), ErrMissingAPIKey,
// ErrTruncated (the stream ended with neither [DONE] nor a finish_reason, or
// the connection broke), ErrMalformed (a chunk that is not the expected
// JSON, or a server that did not stream at all), *DeadlineError and
// *TooLargeError (a bound passed; see Bounds). A cancelled ctx stops the
// request at once and the error wraps ctx.Err().
//
// # What it does not do
//
// No retries, no vision or audio, no reasoning output or usage counts, no
// sampling parameters but the bound on tokens, one choice, streaming Chat
// Completions with Bearer authentication only: docs/design.md
// ("host/openai") says each and why.
//
// # Bounds
//
// Each stream is held to a provider plugin's deadlines and cap
// (Config.Deadlines, Config.Limits; package bridge): past one the request
// is cancelled and Stream returns *DeadlineError or *TooLargeError, and
// past the total or the cap Config.Notify hears it too (docs/design.md,
// "host/openai", has the rules in full). A Provider is safe for
// concurrent use.
package openai
