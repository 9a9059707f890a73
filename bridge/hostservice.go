package bridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// serveService answers a plugin's service/call: the reserved bingo.host
// key here, every other key through the host's router. It runs on inst,
// the instance that asked, until inst ends.
func (p *Plugin) serveService(inst *instance, raw json.RawMessage) (json.RawMessage, error) {
	var call protocol.ServiceCallParams
	if err := json.Unmarshal(raw, &call); err != nil {
		return nil, fmt.Errorf("service/call: malformed params: %v", err)
	}
	if call.Key != protocol.HostServiceKey {
		if p.opts.Services == nil {
			return nil, fmt.Errorf("no service %q is offered to plugins", call.Key)
		}
		return p.opts.Services(inst.ctx, p.opts.Name, call.Key, call.Method, call.Params)
	}
	switch call.Method {
	case protocol.HostAsk:
		var a protocol.AskParams
		if err := json.Unmarshal(orNull(call.Params), &a); err != nil || a.Call == "" || a.Question == "" {
			return nil, fmt.Errorf("ask needs {call, question}")
		}
		rt := inst.inFlight.route(a.Call)
		if rt == nil || rt.ui == nil {
			return nil, fmt.Errorf("ask refused: call %q is not a call plugin %s is running now; a question may only be asked on your own running call", a.Call, p.opts.Name)
		}
		// The question is withdrawn when the call ends or the instance dies.
		answer, err := rt.ui.Ask(rt.ctx, a.Question)
		if err != nil {
			return nil, fmt.Errorf("ask: %v", err)
		}
		return json.Marshal(protocol.AskResult{Answer: answer})
	case protocol.HostNotice:
		var n protocol.NoticeParams
		if err := json.Unmarshal(orNull(call.Params), &n); err != nil || strings.TrimSpace(n.Message) == "" {
			return nil, fmt.Errorf("notice needs {level, message}")
		}
		switch n.Level {
		case "info", "warn", "error":
		default:
			n.Level = "info"
		}
		p.notices.raise(Notice{Plugin: p.opts.Name, Level: n.Level, Message: render.Brief(n.Message, 300)})
		return json.RawMessage("{}"), nil
	}
	return nil, fmt.Errorf("bingo.host offers ask and notice, not %q", call.Method)
}
