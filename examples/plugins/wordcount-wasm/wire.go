package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// This file is the wire: JSON-RPC 2.0, one message per line on stdin and
// stdout, stderr as the log. It is as small as main.py's loop, on purpose:
// the two must answer with the same bytes, request by request, so it
// answers in order, writes keys in main.py's order and escapes strings the
// way main.py does (no HTML escaping).

// JSON-RPC error codes the plugin answers with.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// message is any incoming JSON-RPC message. Only requests (a method and an
// id) are answered: notifications this plugin does not know (tool/cancel,
// ...) and responses are ignored.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Outgoing messages. Field order is wire order; main.py writes the same.
type (
	response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	notification struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
)

// The params this plugin reads: only the fields it uses, so a host that
// sends more (a newer protocol's fields) is never refused.
type (
	toolCallParams struct {
		CallID string          `json:"callId"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
		Cwd    string          `json:"cwd"`
	}
	commandRunParams struct {
		Name string `json:"name"`
		Args string `json:"args"`
		Cwd  string `json:"cwd"`
	}
	completeParams struct {
		Name    string `json:"name"`
		Partial string `json:"partial"`
		Cwd     string `json:"cwd"`
	}
)

// run serves the wire until stdin ends, and returns the exit code: 0 at
// EOF, 1 if stdout broke.
func run(stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "wordcount: started (protocol %d)\n", protocol.Version)
	if err := serve(stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "wordcount: %v\n", err)
		return 1
	}
	return 0
}

// server is one run of the plugin: what it contributes and where it writes.
type server struct {
	tool sdk.Tool
	cmd  sdk.Command
	w    *bufio.Writer
	enc  *json.Encoder
	log  io.Writer
	err  error // the first failed write; once set, serve stops
}

// serve reads messages from r and answers on w, one line each, in order,
// until r ends. A line that is not a JSON-RPC message is logged and
// skipped; only a failed read or write stops it early.
func serve(r io.Reader, w, log io.Writer) error {
	s := &server{tool: countTool{}, cmd: wordcountCommand{}, w: bufio.NewWriter(w), log: log}
	s.enc = json.NewEncoder(s.w) // Encode ends each message with "\n"
	s.enc.SetEscapeHTML(false)   // "<path>" stays "<path>", as in Python
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(line)
			if s.err != nil {
				return s.err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// handle answers one line.
func (s *server) handle(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(s.log, "wordcount: skipped a line that is not a JSON-RPC message: %v\n", err)
		return
	}
	if m.Method == nil || m.ID == nil {
		return // a notification or a response: nothing to answer
	}
	id, ok := normalID(m.ID)
	if !ok {
		fmt.Fprintf(s.log, "wordcount: skipped a request whose id is neither a string nor an integer\n")
		return
	}
	result, rerr := s.dispatch(*m.Method, m.Params)
	if rerr != nil {
		s.send(response{JSONRPC: "2.0", ID: id, Error: rerr})
	} else {
		s.send(response{JSONRPC: "2.0", ID: id, Result: result})
	}
}

// normalID re-encodes a request's id as it will be echoed: a string with
// its escapes normalised, an integer as plain digits. Anything else (null,
// a fraction, an exponent, a bool) is no id this plugin answers; main.py
// draws the same line.
func normalID(raw json.RawMessage) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return nil, false
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return nil, false
		}
		if v == "-0" {
			return json.RawMessage("0"), true
		}
		return json.RawMessage(v), true
	}
	return nil, false
}

// dispatch runs one request to its result or its error.
func (s *server) dispatch(method string, params json.RawMessage) (any, *rpcError) {
	ctx := context.Background()
	switch method {
	case protocol.MethodInitialize:
		// Answer protocol 5 whatever was asked: the host refuses a
		// protocol it does not speak, which is its call, not ours.
		var p struct {
			Protocol any `json:"protocol"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Protocol != float64(protocol.Version) {
			fmt.Fprintf(s.log, "wordcount: host asked for protocol %v; answering %d\n", p.Protocol, protocol.Version)
		}
		return protocol.InitializeResult{
			Protocol: protocol.Version, Name: pluginName, Version: pluginVersion,
			Tools: []sdk.ToolSpec{s.tool.Spec()}, Commands: []sdk.CommandSpec{s.cmd.Spec()},
		}, nil

	case protocol.MethodToolCall:
		var p toolCallParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.Name != s.tool.Spec().Name {
			return nil, &rpcError{codeInvalidParams, "unknown tool: " + p.Name}
		}
		call := sdk.ToolCall{ID: p.CallID, Name: p.Name, Input: p.Input, Cwd: p.Cwd}
		out, _ := s.tool.Call(ctx, call, progress{s, p.CallID}) // countTool never errs
		return protocol.ToolCallResult{Output: out}, nil

	case protocol.MethodCommandRun:
		var p commandRunParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.Name != s.cmd.Spec().Name {
			return nil, &rpcError{codeInvalidParams, "unknown command: " + p.Name}
		}
		outcome, _ := s.cmd.Run(ctx, sdk.CommandRun{Name: p.Name, Args: p.Args, Cwd: p.Cwd})
		return protocol.CommandRunResult{Outcome: outcome}, nil

	case protocol.MethodCommandComplete:
		var p completeParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.Name != s.cmd.Spec().Name {
			return nil, &rpcError{codeInvalidParams, "unknown command: " + p.Name}
		}
		list, _ := s.cmd.Complete(ctx, sdk.CompleteRequest{Name: p.Name, Partial: p.Partial, Cwd: p.Cwd})
		return protocol.CommandCompleteResult{Completions: list}, nil
	}
	return nil, &rpcError{codeMethodNotFound, "method not found: " + method}
}

// decodeParams reads params into p. Absent or null params leave p zero; a
// params that is not an object, or a field that is not a string, is
// invalid params, worded as main.py words it.
func decodeParams(params json.RawMessage, p any) *rpcError {
	if len(params) == 0 {
		return nil
	}
	err := json.Unmarshal(params, p)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return &rpcError{codeInvalidParams, "invalid params: " + te.Field + " must be a string"}
	}
	return &rpcError{codeInvalidParams, "invalid params: params must be an object"}
}

// send writes one message as one line and flushes it, so the host sees it
// now. After a failed write nothing more is tried.
func (s *server) send(v any) {
	if s.err != nil {
		return
	}
	if s.err = s.enc.Encode(v); s.err == nil {
		s.err = s.w.Flush()
	}
}

// progress is the tool's sdk.CallUI: its live line is a tool/progress
// notification. wordcount never asks the person anything.
type progress struct {
	s      *server
	callID string
}

func (p progress) Progress(tail string) {
	p.s.send(notification{JSONRPC: "2.0", Method: protocol.NotifyToolProgress,
		Params: protocol.ToolProgress{CallID: p.callID, Tail: tail}})
}

func (p progress) Ask(context.Context, string) (string, error) {
	return "", errors.New("wordcount asks nothing")
}
