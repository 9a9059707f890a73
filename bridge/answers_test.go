package bridge

import (
	"context"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// An answer without its envelope used to pass for an empty one: the
// person saw nothing and the call "succeeded". Through the real wire it is
// an error naming the plugin, the method and what is missing.
func TestAnswerWithoutItsEnvelopeIsAnError(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			p.raw(`{"jsonrpc":"2.0","id":` + string(*m.ID) + `,"result":{"parts":[{"type":"text","text":"hi"}]}}`)
		}
		return true
	}}
	e := mustStart(t, s, nil)
	_, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	if err == nil || err.Error() != "plugin t: tool/call: bad answer: output: required, but missing" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(e.plugin.Status(), "running") {
		t.Fatalf("a bad answer is the call's failure, not the plugin's death: %s", e.plugin.Status())
	}
}

// The answer to the host's request is decoded once, into the caller's
// type: a member the caller does not read is skipped, not decoded. (A
// generic decode of the whole answer, as jsonrpc2 does to tell an answer
// from a request, refuses a number past float64's range, and the call
// would wait out its deadline.)
func TestAnswerIsDecodedOnceIntoItsType(t *testing.T) {
	s := script{decl: basicDecl(), handle: func(p *peer, m msg) bool {
		if m.Method == protocol.MethodToolCall {
			p.raw(`{"jsonrpc":"2.0","id":` + string(*m.ID) + `,"result":{"output":{"parts":[{"type":"text","text":"big"}]},"n":1e400}}`)
		}
		return true
	}}
	e := mustStart(t, s, nil)
	out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil)
	if err != nil || out.Text() != "big" {
		t.Fatalf("%v %v\n%s", out, err, e.log.String())
	}
}
