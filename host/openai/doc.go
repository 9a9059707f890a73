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
//   - One POST to BaseURL + "/chat/completions" per Stream call with
//     {model, messages, tools, stream: true}. The request's Model, when set,
//     overrides Config.Model, so one configured provider can serve several
//     models of the same server. The request's MaxTokens, when set, bounds
//     the answer: max_completion_tokens for api.openai.com (where
//     max_tokens is deprecated, and refused by reasoning models),
//     max_tokens for any other server (the field they know).
//   - Messages: req.System first as a system message, then system, user,
//     assistant (content and tool_calls) and tool (tool_call_id, content)
//     messages. An assistant call whose input sdk.Assemble kept as a JSON
//     string (the model's arguments were not valid JSON) is sent back as the
//     model's original text, so the model sees what it wrote.
//   - Tools: every sdk.ToolSpec becomes a "function" tool; an empty input
//     schema is sent as {"type":"object"}.
//   - The answer: text deltas (and refusal text) become "text" events; tool
//     call pieces become "toolCall" events carrying the call's index, id,
//     name and an arguments piece, in the order the server sent them, ready
//     for sdk.Assemble. Parallel calls are told apart by their index; a
//     server that omits the index gets one per new call id. The last
//     finish_reason is StreamEnd.StopReason, as the server spelled it
//     ("stop", "tool_calls", "length", ...), and the chunks' model (the
//     id of the model that answered, which may be more precise than the
//     one asked for) is StreamEnd.Model.
//   - Server-sent events of any line length up to 32 MiB per event (a whole
//     tool call may arrive in one line); comments and fields other than
//     "data" are ignored.
//   - An API key read from the environment variable Config.APIKeyEnv at each
//     request and sent as "Authorization: Bearer <key>". Keys never live in
//     the configuration itself.
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
//   - No retries and no backoff: a failed request is reported once and the
//     caller (the turn loop, the person) decides whether to try again.
//   - No vision, audio or file inputs: sdk.Message carries text only.
//   - No reasoning/thinking output (reasoning_content and the like are
//     dropped), no usage or token counts, no logprobs.
//   - No sampling parameters but the bound on tokens (no temperature,
//     top_p, ...): the server's defaults apply.
//   - Only the first choice is read; n > 1 is never requested.
//   - No legacy function_call, no Responses API, no non-streamed answers
//     (a server that ignores stream:true is reported as not streaming).
//   - No Azure-style "api-key" header or api-version query: only Bearer
//     authentication.
//
// # Bounds
//
// Each stream is held to the deadlines and the cap a provider plugin's is
// held to (Config.Deadlines, Config.Limits; package bridge): the first
// chunk of the answer must come within Deadlines.Provider (connecting and
// the response headers included: a local server that loads its model
// from disk first needs that deadline raised), each next one within
// Deadlines.ProviderIdle of the last, and the whole stream within
// Deadlines.ProviderTotal; the response body may not pass
// Limits.ProviderResponseMiB. A chunk is any event with data, whether or
// not it carries text (a reasoning model's dropped reasoning counts: the
// server is working); a comment (a keep-alive) is none. Past a bound the
// request is cancelled at once and Stream returns *DeadlineError (which
// matches context.DeadlineExceeded) or *TooLargeError; past the total or
// the cap, Config.Notify hears it too, as the bridge raises a notice for
// a plugin. Besides, the default HTTP client bounds connecting (30 s) and
// the TLS handshake (10 s). A Provider is safe for concurrent use.
package openai
