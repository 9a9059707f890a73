package mcpbridge

//lint:file-ignore SA1019 MCP roots, logging and sampling are deprecated as of protocol 2026-07-28 but still functional, and servers of every earlier version use them: bingo maps both.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/proxy"
	"github.com/bingo/bingo-plugin-rpc/transport"
	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
)

// server is one translator: the bingo plugin side of one instance, and the
// MCP client of the server instance behind it.
type server struct {
	cfg   Config
	inner transport.Conn
	rpc   *jsonrpc2.Conn
	set   chan struct{}   // closed once rpc is set: a request may arrive before
	ctx   context.Context // the instance's: cancelled when it ends

	mu          sync.Mutex
	ending      bool           // the instance is ending: nothing more starts
	work        sync.WaitGroup // every goroutine the translator started
	cs          *mcp.ClientSession
	ready       chan struct{}   // closed once initialize has answered
	initialized bool            // initialize has arrived
	names       names           // what the current declaration maps to
	calls       []*call         // the tool calls running, oldest first
	errTold     bool            // an error-level log line has raised its notice
	stopped     *stopped        // why the translator killed the server, if it did
	taskTools   map[string]bool // tools the server says require tasks (toolsListed)
	told        *sync.Map       // tools withheld that a notice has named, across the plugin's instances
	redeclMu    sync.Mutex      // one redeclaration at a time
	declDone    chan struct{}   // closed once the latest redeclaration is sent; nil before the first
	declWaiting bool            // a redeclaration is waiting for redeclMu: it has not listed yet

	rootsAsked    atomic.Bool   // the server has asked for its roots (roots/list)
	rootsAnswered chan struct{} // closed once the answer to it is written
	rootsOnce     sync.Once
}

// call is one tool call running on the server.
type call struct {
	id      string
	tool    string // the server's name for the tool
	cancel  context.CancelFunc
	asked   bool // cancelled by tool/cancel, not by the instance ending
	sampled int  // the sampling requests made while answering it
}

// serve translates for one instance until either side ends, and returns
// once the server has ended, with its exit.
func serve(ctx context.Context, inner transport.Conn, stdin io.Reader, stdout io.Writer, cfg Config, told *sync.Map) error {
	innerDone := make(chan struct{})
	var innerErr error
	go func() {
		innerErr = inner.Wait()
		close(innerDone)
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r, ok := inner.(mcphttp.Session); ok {
		// The sdk's client session meets the HTTP transport itself
		// (initialize), and its errors name the URL as expanded.
		cfg.Log = scrubbed{cfg.Log, r}
	}
	s := &server{cfg: cfg, inner: inner, ctx: ctx, ready: make(chan struct{}), set: make(chan struct{}),
		taskTools: map[string]bool{}, told: told, rootsAnswered: make(chan struct{})}
	stream := protocol.NewLineStream(pipe{stdin, stdout}, protocol.LineStreamOptions{Take: func(line []byte) bool {
		method, params, ok := protocol.NotificationOf(line)
		if ok {
			s.notification(method, params)
		}
		return ok
	}})
	s.rpc = jsonrpc2.NewConn(ctx, stream, s, jsonrpc2.SetLogger(log.New(cfg.Log, "mcpbridge: ", 0)))
	close(s.set)

	select {
	case <-s.rpc.DisconnectNotify():
		if ctx.Err() == nil {
			// The host closed our stdin: a graceful stop. The server's
			// stdin closes too, and it ends in its own time or when the
			// host kills this instance.
			_ = inner.Close()
		}
	case <-innerDone:
	case <-ctx.Done():
	}
	select {
	case <-innerDone:
	case <-ctx.Done():
		_ = inner.Kill()
		<-innerDone
	}

	s.mu.Lock()
	s.ending = true
	cs := s.cs
	for _, c := range s.calls {
		c.cancel()
	}
	s.mu.Unlock()
	cancel()
	s.rpc.Close()
	<-s.rpc.DisconnectNotify()
	if cs != nil {
		_ = cs.Close() // the server is gone: this only ends the session's goroutines
	}
	s.work.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped != nil {
		return s.stopped
	}
	return innerErr
}

// stopped is why the translator killed the server: the instance's exit,
// and so the reason its death's one notice gives.
type stopped struct{ why string }

func (e *stopped) Error() string { return e.why + "; killed" }

// stop kills the server, for why, unless the instance is ending already.
// The instance ends with it, and the bridge's death rules apply: one
// notice, and the next use starts it again.
func (s *server) stop(why string) {
	s.mu.Lock()
	if s.ending || s.stopped != nil {
		s.mu.Unlock()
		return
	}
	s.stopped = &stopped{why}
	s.mu.Unlock()
	fmt.Fprintf(s.cfg.Log, "mcpbridge: %s; killing the server\n", why)
	_ = s.inner.Kill()
}

// sessionEnded ends the instance once its MCP session has ended, err
// saying why. A session ends when the server's stdout or stdin does: a
// server that exits ends it, and is given Grace to be seen to exit, so
// that its exit is the death's reason; one that lives on without a
// session (it closed its stdout) would otherwise be sent every later
// call, each waiting for its deadline. The instance ending on its own
// ends the session too, which is no reason.
func (s *server) sessionEnded(err error) {
	if r, ok := s.inner.(mcphttp.Session); ok {
		// No process to see exit: the session's end is the instance's.
		r.Ended(err)
		return
	}
	t := time.NewTimer(s.cfg.Deadlines.Grace)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return
	case <-t.C:
	}
	if err == nil {
		err = io.EOF
	}
	s.stop(fmt.Sprintf("its MCP session ended (%v)", err))
}

// pipe is the translator's end of the bingo wire.
type pipe struct {
	io.Reader
	io.Writer
}

func (p pipe) Close() error {
	var errs []error
	for _, v := range []any{p.Reader, p.Writer} {
		if c, ok := v.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// spawn runs f on a goroutine the instance waits for, unless it is ending.
func (s *server) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending {
		return false
	}
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		f()
	}()
	return true
}

// Handle answers the host's requests, each on its own goroutine
// (jsonrpc2.Handler). Notifications reach notification instead.
func (s *server) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-s.set
	if req.Notif {
		return
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	s.spawn(func() {
		res, err := s.dispatch(req.Method, params)
		if errors.Is(err, errGone) {
			return
		}
		if err != nil {
			var rerr *jsonrpc2.Error
			if !errors.As(err, &rerr) {
				rerr = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: s.scrub(err.Error())}
			}
			_ = conn.ReplyWithError(s.ctx, req.ID, rerr)
			return
		}
		_ = conn.Reply(s.ctx, req.ID, res)
	})
}

// dispatch answers one request.
func (s *server) dispatch(method string, params json.RawMessage) (any, error) {
	if method == protocol.MethodInitialize {
		return s.initialize(params)
	}
	select {
	case <-s.ready:
	default:
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: method + " before initialize"}
	}
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	if cs == nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "the MCP server did not initialize"}
	}
	switch method {
	case Probe:
		return s.ping(cs)
	case protocol.MethodToolCall:
		var p protocol.ToolCallParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.callTool(cs, p)
	case protocol.MethodCommandRun:
		var p protocol.CommandRunParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.bounded(proxy.KindCommand, func(ctx context.Context) (any, error) { return s.runPrompt(ctx, cs, p) })
	case protocol.MethodCommandComplete:
		var p protocol.CommandCompleteParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.bounded(proxy.KindComplete, func(ctx context.Context) (any, error) { return s.completePrompt(ctx, cs, p) })
	case protocol.MethodContextContribute:
		var p protocol.ContextContributeParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.bounded(proxy.KindContributor, func(ctx context.Context) (any, error) { return s.contribute(ctx, cs, p) })
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "an MCP server translated by bingo does not answer " + method}
}

// bounded runs f, one request the host has no way to cancel on the wire
// (only tool/call and provider/stream have a cancel notification), under
// the instance's context ended at the request's deadline. Past that the
// bridge has stopped waiting (a contributor is dropped from its round),
// so the work is for no one: the sdk tells the server to stop
// (notifications/cancelled) and f answers. That answer, past the
// deadline, is the translator's and shows nothing of the server: the
// bridge's probe (Probe) is what does. Unbounded, one hung
// resources/read held its goroutine and the server's work until the
// instance died.
func (s *server) bounded(k proxy.Kind, f func(context.Context) (any, error)) (any, error) {
	ctx, cancel := context.WithTimeout(s.ctx, k.Deadline(s.cfg.Deadlines))
	defer cancel()
	return f(ctx)
}

// Probe is the method of the bridge's liveness probe (bridge.Options.Probe)
// for a translated server: the translator answers it once the server has
// answered a ping. The translator answers a request past its deadline
// itself (bounded; a cancelled tool call), so only this answer, or one
// within the request's deadline, says the server is alive; a server that
// answers nothing at all is wedged by the bridge's one rule, as any
// plugin would be.
const Probe = "mcp/ping"

// ping answers the probe once the server has answered a ping.
func (s *server) ping(cs *mcp.ClientSession) (any, error) {
	if err := cs.Ping(s.ctx, nil); err != nil {
		if gone := s.gone(err); gone != nil {
			return nil, gone
		}
		return nil, fmt.Errorf("MCP ping: %v", err)
	}
	return struct{}{}, nil
}

// errGone ends a request whose server went away under it: the translator
// answers nothing, and the instance ends with the server, so the bridge
// sees a plugin die mid-call (one notice; the next use starts it again),
// not an answer from a plugin it would go on using.
var errGone = errors.New("the MCP server has gone")

// gone is errGone, once the instance has ended, when err says the
// connection to the server broke (or the server is being killed); nil for
// any other error.
func (s *server) gone(err error) error {
	if !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, transport.ErrKilled) && !s.remoteEnded() {
		return nil
	}
	<-s.ctx.Done()
	return errGone
}

// scrub is text as the person may see it: for a remote server, the URL
// as expanded (a ${VAR} in it may be a secret), which the sdk's errors
// hold, as the entry shows it.
func (s *server) scrub(text string) string {
	if r, ok := s.inner.(mcphttp.Session); ok {
		return r.Scrub(text)
	}
	return text
}

// scrubbed is a remote server's log, each write scrubbed (server.scrub).
type scrubbed struct {
	w io.Writer
	r mcphttp.Session
}

func (l scrubbed) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, l.r.Scrub(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// remoteEnded reports whether the instance is a remote server's session
// that has ended: whatever error the sdk's client then gives a request,
// the session is gone.
func (s *server) remoteEnded() bool {
	r, ok := s.inner.(mcphttp.Session)
	if !ok {
		return false
	}
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

func decode(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	return nil
}

// notification handles the host's notifications, on the wire's reader.
func (s *server) notification(method string, params json.RawMessage) {
	if method != protocol.NotifyToolCancel {
		return
	}
	var c protocol.ToolCancel
	if json.Unmarshal(params, &c) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cl := range s.calls {
		if cl.id == c.CallID {
			// The sdk sends notifications/cancelled when the call's ctx
			// ends; the host still waits for the answer.
			cl.asked = true
			cl.cancel()
		}
	}
}

// initialize connects the MCP client and answers the handshake with what
// the server offers.
func (s *server) initialize(params json.RawMessage) (any, error) {
	var p protocol.InitializeParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	again := s.initialized
	s.initialized = true
	s.mu.Unlock()
	if again {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "initialize was sent already"}
	}
	defer close(s.ready)
	opts := &mcp.ClientOptions{
		// The person's plugins.<name> slice, where an MCP server can read
		// it; roots only when there is one to offer, and never listChanged
		// (the sdk's default): the root does not change while it runs.
		Capabilities: &mcp.ClientCapabilities{
			Experimental: map[string]any{"bingo": bingoCapability(p.Config)},
		},
		ElicitationHandler:         s.elicit,
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.listChanged() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.listChanged() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {},
		LoggingMessageHandler:      s.logMessage,
	}
	if s.cfg.Sample != nil {
		opts.CreateMessageHandler = s.sample
	}
	if s.cfg.Root != "" {
		opts.Capabilities.RootsV2 = &mcp.RootCapabilities{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bingo", Version: strconv.Itoa(protocol.Version)}, opts)
	if s.cfg.Root != "" {
		client.AddRoots(&mcp.Root{URI: rootURI(s.cfg.Root), Name: filepath.Base(s.cfg.Root)})
	}
	// The session never closes the server's stdin: serve does, when the
	// host stops the instance.
	t := lineTransport{rw: s.inner, log: s.cfg.Log, trace: s.cfg.Trace, notify: s.notified, result: func(method string, result json.RawMessage) {
		if method == "tools/list" {
			s.toolsListed(result)
		}
	}}
	if s.cfg.Root != "" {
		t.rootsAsked = func() { s.rootsAsked.Store(true) }
		t.rootsAnswered = func() { s.rootsOnce.Do(func() { close(s.rootsAnswered) }) }
	}
	var session mcp.Transport = t
	if r, ok := s.inner.(mcphttp.Session); ok {
		// A remote server: the sdk's session meets the sdk's own HTTP
		// transport, and the translator watches the wire as it would a
		// stdio server's lines.
		session = r.Client(newWire(t).tap)
	}
	cs, err := client.Connect(s.ctx, session, nil)
	if err != nil {
		err = fmt.Errorf("the MCP server failed to initialize: %v", err)
		fmt.Fprintf(s.cfg.Log, "mcpbridge: %v\n", err)
		return nil, err
	}
	s.mu.Lock()
	s.cs = cs
	s.mu.Unlock()
	s.spawn(func() { s.sessionEnded(cs.Wait()) })

	init := cs.InitializeResult()
	if si := init.ServerInfo; si != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: MCP server %q version %q, protocol %s\n", si.Name, si.Version, init.ProtocolVersion)
	} else {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: MCP server with no name, protocol %s\n", init.ProtocolVersion)
	}
	if init.Capabilities != nil && init.Capabilities.Logging != nil {
		if err := cs.SetLoggingLevel(s.ctx, &mcp.SetLoggingLevelParams{Level: logLevel}); err != nil {
			fmt.Fprintf(s.cfg.Log, "mcpbridge: logging/setLevel: %v\n", err)
		}
	}
	decl, err := s.declaration(cs)
	if err != nil {
		return nil, fmt.Errorf("the MCP server initialized but %v", err)
	}
	s.rootsTaken(cs)
	return decl, nil
}

// rootsTaken returns once a server that asked for its roots as it
// initialized has read the answer and had time to apply it: the host's
// first call, which follows the handshake, must not find it without them
// (server-filesystem started with no directory refused a one-shot read,
// now and then). A server asks when it hears notifications/initialized,
// so by the time its answers to the declaration's lists are read, its
// roots/list has been (rootsAsked). Once the answer is written, pings: the
// server answers each after reading what came before it. But a server may
// apply its roots in its own time (server-filesystem checks each on disk
// first, off its main loop), which no answer of its shows; so the pings
// are spread over rootsSettle, each a turn of its loop on what it read.
// Each wait is bounded by Grace: a server slow to take its roots is no
// reason to fail its start.
func (s *server) rootsTaken(cs *mcp.ClientSession) {
	if !s.rootsAsked.Load() {
		return
	}
	t := time.NewTimer(s.cfg.Deadlines.Grace)
	defer t.Stop()
	select {
	case <-s.rootsAnswered:
	case <-t.C:
		return
	case <-s.ctx.Done():
		return
	}
	for i := range rootsPings {
		if i > 0 {
			select {
			case <-time.After(rootsSettle / (rootsPings - 1)):
			case <-s.ctx.Done():
				return
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Deadlines.Grace)
		err := cs.Ping(ctx, nil)
		cancel()
		if err != nil {
			return
		}
	}
}

// How a server's roots are given time to apply (rootsTaken): pings spread
// over rootsSettle.
const (
	rootsPings  = 4
	rootsSettle = 60 * time.Millisecond
)

// rootURI is dir's file:// URI.
func rootURI(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

// bingoCapability is the client's experimental "bingo" capability: the
// person's config, left out when they set none: the 2026-07-28 schema
// forbids a null there, and a server that checks refuses the session.
func bingoCapability(raw json.RawMessage) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}
	}
	return map[string]any{"config": raw}
}

// listChanged re-reads what the server offers and declares it again
// (plugin/declare), off the sdk's reader: listing is a request, and its
// answer arrives on that reader. A notification that finds a
// redeclaration still waiting to list joins it, since that one reads the
// lists after the notification: a server flooding list_changed costs at
// most one re-list running and one waiting, not one per notification.
func (s *server) listChanged() {
	s.mu.Lock()
	if s.declWaiting {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.declDone = done
	s.declWaiting = true
	s.mu.Unlock()
	ok := s.spawn(func() {
		defer close(done)
		s.redeclMu.Lock()
		defer s.redeclMu.Unlock()
		s.mu.Lock()
		s.declWaiting = false // from here a notification may postdate the lists read
		cs := s.cs
		s.mu.Unlock()
		if cs == nil {
			return
		}
		decl, err := s.declaration(cs)
		if err != nil {
			fmt.Fprintf(s.cfg.Log, "mcpbridge: after list_changed: %v\n", err)
			return
		}
		if err := s.rpc.Notify(s.ctx, protocol.NotifyPluginDeclare, decl); err != nil {
			fmt.Fprintf(s.cfg.Log, "mcpbridge: %s: %v\n", protocol.NotifyPluginDeclare, err)
		}
	})
	if !ok {
		close(done)
	}
}

// declared waits until the latest redeclaration has been sent.
func (s *server) declared() {
	s.mu.Lock()
	done := s.declDone
	s.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-s.ctx.Done():
	}
}

// notice says one line to the person under the plugin's name, on a
// goroutine of its own.
func (s *server) notice(level, message string) {
	s.spawn(func() { s.say(level, message) })
}

// say says one line to the person under the plugin's name, and returns
// once the host has it.
func (s *server) say(level, message string) {
	raw, _ := json.Marshal(protocol.NoticeParams{Level: level, Message: message})
	var res protocol.ServiceCallResult
	err := s.rpc.Call(s.ctx, protocol.MethodServiceCall, protocol.ServiceCallParams{
		Key: protocol.HostServiceKey, Method: protocol.HostNotice, Params: raw}, &res)
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: notice: %v\n", err)
	}
}
