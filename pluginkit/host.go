package pluginkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// Host is the plugin's door back to the host, for the instance being
// served. Every handler's ctx carries it (HostFrom). Its methods are safe
// for concurrent use.
type Host struct {
	conn *jsonrpc2.Conn
	done <-chan struct{}
	exit func(error)
}

type hostKey struct{}

// ErrNoHost is what the methods of a nil *Host return: HostFrom was given a
// ctx that no handler of a served Plugin passed on.
var ErrNoHost = errors.New("pluginkit: no host: the context does not come from a served plugin")

// HostFrom returns the host of the instance whose handler ctx came from, or
// nil outside a handler. The methods of a nil *Host fail with ErrNoHost.
func HostFrom(ctx context.Context) *Host {
	h, _ := ctx.Value(hostKey{}).(*Host)
	return h
}

// HostError is the host's refusal of a Host call: the JSON-RPC error it
// answered with.
type HostError struct {
	Code    int64
	Message string
}

func (e *HostError) Error() string { return e.Message }

// Notice says one line to the person under the plugin's own name. level is
// "info", "warn" or "error".
func (h *Host) Notice(ctx context.Context, level, message string) error {
	return h.Call(ctx, protocol.HostServiceKey, protocol.HostNotice, protocol.NoticeParams{Level: level, Message: message}, nil)
}

// Call calls method of the service the host knows by key: another plugin's,
// or the host's own (protocol.HostServiceKey). params is sent as JSON;
// result, if not nil, receives the answer. It waits for the answer or ctx.
func (h *Host) Call(ctx context.Context, key, method string, params, result any) error {
	if h == nil {
		return ErrNoHost
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("pluginkit: %s %s: params: %w", key, method, err)
	}
	var res protocol.ServiceCallResult
	err = h.conn.Call(ctx, protocol.MethodServiceCall, protocol.ServiceCallParams{Key: key, Method: method, Params: raw}, &res)
	if rerr := (*jsonrpc2.Error)(nil); errors.As(err, &rerr) {
		return &HostError{Code: rerr.Code, Message: rerr.Message}
	}
	if err != nil {
		return fmt.Errorf("pluginkit: %s %s: %w", key, method, err)
	}
	if result != nil && len(res.Result) > 0 {
		if err := json.Unmarshal(res.Result, result); err != nil {
			return fmt.Errorf("pluginkit: %s %s: result: %w", key, method, err)
		}
	}
	return nil
}

// Done is closed when the instance begins to end: stdin ended, Serve's ctx
// was cancelled, or Exit was called. Every handler's ctx is cancelled then
// too; Done is for work that ignores the cancelling of its own call (a
// tool that does not stop on tool/cancel) but must not outlive the
// instance, since Serve waits for every handler before it returns.
func (h *Host) Done() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.done
}

// Exit ends the instance because the plugin cannot go on: from this moment
// nothing more is written (the call that asked is not answered), every
// handler's ctx is cancelled, and Serve returns err. Main exits with err's
// ExitCode() if it has one, 1 otherwise. A nil err is reported as an error
// too: ending quietly is what closing stdin is for.
func (h *Host) Exit(err error) {
	if h == nil {
		return
	}
	if err == nil {
		err = errors.New("pluginkit: the plugin exited")
	}
	h.exit(err)
}
