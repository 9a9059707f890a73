package check

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport"
)

// line is one wire line, as it crossed.
type line struct {
	from string // "plugin" (its stdout) or "host" (its stdin)
	at   time.Time
	text []byte
}

// tapKeep bounds what the tap keeps of the plugin's lines, in bytes (a
// line's text and lineCost): one line at the bridge's cap, or a million
// short ones. Past it the plugin's lines are counted, not kept, and wire
// says so: a plugin flooding stdout while checked grew the checker with
// every line it wrote. The host's own lines are always kept; the checks
// count them.
const (
	tapKeep  = 64 << 20
	lineCost = 64
)

// tap records every line each way, over every instance.
type tap struct {
	mu       sync.Mutex
	lines    []line
	kept     int // bytes of the plugin's lines kept, as tapKeep counts them
	dropped  int // the plugin's lines past tapKeep
	conns    []*tapConn
	watchers []watcher
}

type watcher struct {
	sub string
	ch  chan struct{}
}

func (t *tap) add(from string, text []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if from != "host" {
		if t.kept += len(text) + lineCost; t.kept > tapKeep {
			t.dropped++
			return
		}
	}
	t.lines = append(t.lines, line{from: from, at: time.Now(), text: bytes.Clone(text)})
	if from != "host" {
		return
	}
	kept := t.watchers[:0]
	for _, w := range t.watchers {
		if bytes.Contains(text, []byte(w.sub)) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	t.watchers = kept
}

// watch returns a channel closed once the host writes a line holding sub.
func (t *tap) watch(sub string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	t.watchers = append(t.watchers, watcher{sub, ch})
	return ch
}

func (t *tap) count(from, sub string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.lines {
		if l.from == from && bytes.Contains(l.text, []byte(sub)) {
			n++
		}
	}
	return n
}

func (t *tap) saw(from, sub string) bool { return t.count(from, sub) > 0 }

func (t *tap) last() *tapConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.conns) == 0 {
		return nil
	}
	return t.conns[len(t.conns)-1]
}

type tapTransport struct {
	transport.Transport
	t *tap
}

func (tt *tapTransport) Start(ctx context.Context) (transport.Conn, error) {
	conn, err := tt.Transport.Start(ctx)
	if err != nil {
		return nil, err
	}
	c := &tapConn{Conn: conn, t: tt.t}
	tt.t.mu.Lock()
	tt.t.conns = append(tt.t.conns, c)
	tt.t.mu.Unlock()
	return c, nil
}

// tapConn splits what crosses one instance's pipes into lines.
type tapConn struct {
	transport.Conn
	t       *tap
	in, out []byte // partial lines: from the plugin, to it
	killed  atomic.Bool
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in = c.feed("plugin", c.in, p[:n])
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.out = c.feed("host", c.out, p)
	return c.Conn.Write(p)
}

func (c *tapConn) feed(from string, buf, p []byte) []byte {
	buf = append(buf, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		c.t.add(from, bytes.TrimSuffix(buf[:i], []byte("\r")))
		buf = buf[i+1:]
	}
}

func (c *tapConn) kill() { c.killed.Store(true); c.Conn.Kill() }

func (c *tapConn) killedByUs() bool { return c.killed.Load() }

// counter counts what the plugin writes to stderr and keeps its tail.
type counter struct {
	mu      sync.Mutex
	bytes   int
	nl      int
	tailBuf []byte
}

func (c *counter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += len(p)
	c.nl += bytes.Count(p, []byte("\n"))
	c.tailBuf = append(c.tailBuf, p...)
	if len(c.tailBuf) > 4096 {
		c.tailBuf = c.tailBuf[len(c.tailBuf)-4096:]
	}
	return len(p), nil
}

func (c *counter) tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(c.tailBuf)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return render.Brief(strings.Join(lines, " | "), 300)
}

// log is where the bridge writes what it has to say about the wire: not
// counted as the plugin's stderr.
func (c *counter) log() io.Writer { return io.Discard }

// lineProblems says how one line breaks the wire's rules (the envelope,
// and, for a request or notification, whether side from may send it and
// its params), in one line, or "".
func lineProblems(text []byte, from protocol.Direction) string {
	ps := protocol.CheckEnvelope(text)
	var e envelope
	if len(ps) == 0 && json.Unmarshal(text, &e) == nil && e.Method != "" {
		var ok bool
		if ps, ok = protocol.CheckParams(e.Method, from, e.Params); !ok {
			return fmt.Sprintf("%s is not a method the %s sends", protocol.Quote(e.Method), side(from))
		}
	}
	return joinProblems(ps)
}

func side(from protocol.Direction) string {
	if from == protocol.HostToPlugin {
		return "host"
	}
	return "plugin"
}

// joinProblems says problems in one line: the first four, and how many
// more.
func joinProblems(ps []protocol.Problem) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.Error())
	}
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	return strings.Join(parts, "; ")
}

// envelope is any JSON-RPC message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// handshake validates every answer to initialize strictly against the
// schema's InitializeResult.
func (c *checker) handshake() {
	ids := map[string]bool{}
	c.tap.mu.Lock()
	lines := append([]line(nil), c.tap.lines...)
	c.tap.mu.Unlock()
	for _, l := range lines {
		var e envelope
		if json.Unmarshal(l.text, &e) != nil {
			continue
		}
		if l.from == "host" && e.Method == protocol.MethodInitialize {
			ids[string(e.ID)] = true
		}
		if l.from == "plugin" && e.Method == "" && ids[string(e.ID)] && e.Result != nil {
			if msg := joinProblems(protocol.CheckResult(protocol.MethodInitialize, e.Result)); msg != "" {
				c.add(Fail, "handshake", "the answer to initialize breaks schema/plugin.json: %s", msg)
			} else {
				c.add(OK, "handshake", "the answer to initialize is valid against schema/plugin.json")
			}
			return
		}
	}
}

// wire reads the tapped lines, both ways, once everything has run.
func (c *checker) wire() {
	c.tap.mu.Lock()
	lines := append([]line(nil), c.tap.lines...)
	dropped := c.tap.dropped
	c.tap.mu.Unlock()
	seen := map[string]bool{}
	clean := true
	fail := func(level, subject, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		clean = clean && level != Fail
		if !seen[subject+msg] {
			seen[subject+msg] = true
			c.add(level, subject, "%s", msg)
		}
	}
	methods := map[string]string{} // the host's request ids → methods
	var polluted []string
	var in, out int
	for _, l := range lines {
		if l.from == "host" {
			out++
			var e envelope
			if json.Unmarshal(l.text, &e) == nil && e.Method != "" && e.ID != nil {
				methods[string(e.ID)] = e.Method
			}
			if msg := lineProblems(l.text, protocol.HostToPlugin); msg != "" {
				fail(Warn, "wire", "the host sent a line the schema does not know (a host bug): %s: %s", msg, render.Brief(string(l.text), 120))
			}
			continue
		}
		in++
		if len(bytes.TrimSpace(l.text)) == 0 {
			continue
		}
		if !json.Valid(l.text) {
			polluted = append(polluted, render.Brief(string(l.text), 80))
			continue
		}
		var e envelope
		if err := json.Unmarshal(l.text, &e); err != nil {
			fail(Fail, "wire", "a line on stdout is JSON but not a JSON-RPC message: %s", render.Brief(string(l.text), 120))
			continue
		}
		if ps := protocol.CheckEnvelope(l.text); len(ps) > 0 {
			fail(Fail, "wire", "a line from the plugin breaks JSON-RPC 2.0 as schema/plugin.json states it: %s: %s", joinProblems(ps), render.Brief(string(l.text), 120))
			continue
		}
		switch {
		case e.Method != "":
			ps, ok := protocol.CheckParams(e.Method, protocol.PluginToHost, e.Params)
			if !ok {
				fail(Fail, "wire", "%s from the plugin: not a method a plugin sends", protocol.Quote(e.Method))
				continue
			}
			c.problems(fail, e.Method+" from the plugin", ps, "")
		case e.Error == nil: // an error answer is all envelope
			method := methods[string(e.ID)]
			if method == "" {
				fail(Fail, "wire", "an answer to no request the host sent (id %s)", e.ID)
				continue
			}
			if method == protocol.MethodInitialize {
				continue // the handshake's check
			}
			m, _ := protocol.Lookup(method)
			c.problems(fail, "answer to "+method, protocol.CheckResult(method, e.Result), m.Wrapper())
		}
	}
	if dropped > 0 {
		fail(Warn, "wire", "the plugin wrote more than %d MiB on stdout while checked; its %d lines past that were not checked", tapKeep>>20, dropped)
		clean = false // its lines were not all read, so none is vouched for
	}
	if len(polluted) > 0 {
		fail(Fail, "stdout", "stdout pollution: %d line(s) on stdout are not JSON, e.g. %q; stdout is the wire, log to stderr", len(polluted), polluted[0])
	}
	c.stderr.mu.Lock()
	n, nl := c.stderr.bytes, c.stderr.nl
	c.stderr.mu.Unlock()
	const loud = 64 << 10
	switch {
	case n > loud:
		fail(Warn, "stderr", "wrote %d bytes (%d lines) to stderr while checked: its log is capped, keep it short", n, nl)
	default:
		fail(OK, "stderr", "wrote %d bytes (%d lines) to stderr, which goes to its log", n, nl)
	}
	if clean {
		fail(OK, "wire", "%d lines from the plugin and %d from the host, each one JSON-RPC message", in, out)
	}
}

// problems reports the ways an answer breaks the rules: a missing wrapper
// in those words, unknown keys as such.
func (c *checker) problems(fail func(level, subject, format string, args ...any), subject string, ps []protocol.Problem, wrapper string) {
	for _, p := range ps {
		switch {
		case p.Unknown:
			fail(Fail, subject, "unknown field %s (the host ignores it; a misspelling?)", p.Path)
		case wrapper != "" && p.Path == wrapper && strings.Contains(p.Message, "missing"):
			fail(Fail, subject, "answer is missing its wrapper: the result must be {%q: …}", wrapper)
		case wrapper != "" && p.Path == "" && strings.HasPrefix(p.Message, "want an object"):
			fail(Fail, subject, "answer is missing its wrapper: the result must be {%q: …}, not %s", wrapper, strings.TrimPrefix(p.Message, "want an object, got "))
		default:
			fail(Fail, subject, "breaks schema/plugin.json: %v", p)
		}
	}
}
