package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// pipeConn is the read end of an OS pipe, whose reads can be interrupted,
// and nothing to write to.
type pipeConn struct{ *os.File }

func (pipeConn) Write(p []byte) (int, error) { return len(p), nil }

// callerWait is what a host's caller does while it waits for its answer
// on ch (pendingCall.await): it reads in its turns.
func callerWait(ctx context.Context, w *wire, ch chan string) (string, error) {
	s := w.turns
	s.enter()
	defer s.leave()
	defer context.AfterFunc(ctx, s.interrupt)()
	for {
		select {
		case a := <-ch:
			return a, nil
		case <-ctx.Done():
			return "", ctx.Err()
		case <-s.roleReady():
			select {
			case a := <-ch:
				s.release()
				return a, nil
			default:
			}
			w.readTurn(func() bool { return ctx.Err() != nil })
		}
	}
}

// turnsRig is a wire over a pipe whose other end the test writes, with
// callers' answers routed by id (their results go to their channels), and
// the plugin's requests recorded as run serves them.
type turnsRig struct {
	wire *wire
	w    io.WriteCloser
	mu   sync.Mutex
	chs  map[string]chan string

	notes    []string // notifications, in the order they were handled
	requests []string // the requests run served, in order
	served   chan struct{}
	ended    chan error // the reason the stream's end gave
}

func newTurnsRig(t *testing.T) *turnsRig { return newTurnsRigWith(t, func([]byte, error) {}) }

func newTurnsRigWith(t *testing.T, skipped func([]byte, error)) *turnsRig {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return newTurnsRigOver(t, pipeConn{r}, w, skipped)
}

// newTurnsRigOver is the rig over a conn the wire reads, whose reads can be
// interrupted, and w, which writes to it.
func newTurnsRigOver(t *testing.T, r io.ReadWriteCloser, w io.WriteCloser, skipped func([]byte, error)) *turnsRig {
	g := &turnsRig{w: w, chs: map[string]chan string{}, served: make(chan struct{}, 1000), ended: make(chan error, 1)}
	g.wire = newWire(r, protocol.LineStreamOptions{}, make(chan struct{}), wireHooks{
		notify: func(method string, params json.RawMessage) {
			g.notes = append(g.notes, string(params)) // one reader at a time: no lock
		},
		answer: func(id jsonrpc2.ID, r reply) bool {
			g.mu.Lock()
			ch := g.chs[id.Str]
			delete(g.chs, id.Str)
			g.mu.Unlock()
			if ch == nil {
				return false
			}
			ch <- string(r.result)
			return true
		},
		serve: func(m *message) {
			g.requests = append(g.requests, fmt.Sprintf(`{"id":%s,"method":%q}`, m.ID, m.Method)) // read after ran only
			g.served <- struct{}{}
		},
		skipped: skipped,
		end:     func(why error) { g.ended <- why },
		log:     io.Discard,
	})
	if g.wire.turns == nil {
		t.Fatal("a pipe's wire does not read in turns")
	}
	go g.wire.run()
	t.Cleanup(func() { w.Close(); <-g.wire.ran; r.Close() })
	return g
}

// end closes the plugin's side and waits for the wire's reader to end.
func (g *turnsRig) end() {
	g.w.Close()
	<-g.wire.ran
}

func (g *turnsRig) expect(id string) chan string {
	ch := make(chan string, 1)
	g.mu.Lock()
	g.chs[id] = ch
	g.mu.Unlock()
	return ch
}

func (g *turnsRig) write(t *testing.T, line string) {
	if _, err := g.w.Write([]byte(line + "\n")); err != nil {
		t.Error(err)
	}
}

// A line that is not a message is written to the log before anyone reads
// the next: the caller whose answer follows it has it only once the
// skipped line is logged. (A one-shot bingo that exits on its answer lost
// the record of a garbage line read just before it.) In a synctest bubble,
// over a pipe made of channels (net.Pipe), synctest.Wait shows the caller
// has gone as far as it can while the line is being logged: not to its
// answer.
func TestTurnsSkippedLineIsLoggedBeforeTheNextIsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logging, logged := make(chan struct{}), make(chan struct{})
		var release sync.Once
		defer release.Do(func() { close(logged) }) // on failure too: nothing stays blocked in the bubble
		r, w := net.Pipe()
		g := newTurnsRigOver(t, r, w, func([]byte, error) {
			close(logging)
			<-logged // a log slow to write
		})
		ch := g.expect("c1")
		answered := make(chan string, 1)
		go func() {
			a, _ := callerWait(context.Background(), g.wire, ch)
			answered <- a
		}()
		go func() { // each write waits for its read
			g.write(t, "this is not json")
			g.write(t, `{"id":"c1","result":1}`)
		}()
		<-logging
		synctest.Wait()
		select {
		case a := <-answered:
			t.Fatalf("the caller had its answer %s while the line before it was still being logged", a)
		default:
		}
		release.Do(func() { close(logged) })
		if a := <-answered; a != "1" {
			t.Fatalf("the caller's answer = %s, want 1", a)
		}
	})
}

// Many callers waiting at once, their answers out of order, among
// notifications, the plugin's requests, and lines split across writes:
// each caller gets its own answer, notifications are handled in wire
// order, and run serves every request in wire order, then ends with the
// stream.
func TestTurnsManyCallers(t *testing.T) {
	g := newTurnsRig(t)
	const callers = 40
	ids := make([]string, callers)
	chs := make([]chan string, callers)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
		chs[i] = g.expect(ids[i])
	}
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, err := callerWait(ctx, g.wire, chs[i])
			if want := fmt.Sprint(i); err != nil || got != want {
				t.Errorf("caller %d: %q, %v; want %q", i, got, err, want)
			}
		})
	}
	order := rand.Perm(callers)
	var wantNotes, wantRequests []string
	for k, i := range order {
		note := fmt.Sprintf(`{"n":%d}`, k)
		wantNotes = append(wantNotes, note)
		g.write(t, `{"method":"progress","params":`+note+`}`)
		obj := fmt.Sprintf(`{"id":%d,"method":"service/call"}`, k)
		wantRequests = append(wantRequests, obj)
		g.write(t, obj)
		answer := fmt.Sprintf(`{"id":%q,"result":%d}`, ids[i], i)
		// Half the answers arrive in two writes: a read that takes the
		// first half must wait for the rest. (A read interrupted between
		// the halves: TestTurnsCallerGivesUp.)
		if k%2 == 0 {
			g.write(t, answer)
			continue
		}
		if _, err := g.w.Write([]byte(answer[:7])); err != nil {
			t.Fatal(err)
		}
		g.write(t, answer[7:])
	}
	wg.Wait()
	g.end()
	if strings.Join(g.notes, " ") != strings.Join(wantNotes, " ") {
		t.Errorf("notifications\n%v\nwant\n%v", g.notes, wantNotes)
	}
	if strings.Join(g.requests, " ") != strings.Join(wantRequests, " ") {
		t.Errorf("run served\n%v\nwant\n%v", g.requests, wantRequests)
	}
}

// One caller at a time, as a host with one call in flight: the caller
// reads its answer itself, and between calls run reads.
func TestTurnsOneCallAtATime(t *testing.T) {
	g := newTurnsRig(t)
	for i := range 200 {
		id := fmt.Sprintf("c%d", i)
		ch := g.expect(id)
		done := make(chan struct{})
		go func() {
			defer close(done)
			got, err := callerWait(context.Background(), g.wire, ch)
			if want := fmt.Sprint(i); err != nil || got != want {
				t.Errorf("call %d: %q, %v; want %s", i, got, err, want)
			}
		}()
		if i%3 == 0 {
			g.write(t, `{"method":"progress","params":{}}`)
		}
		g.write(t, fmt.Sprintf(`{"id":%q,"result":%d}`, id, i))
		<-done
		if i%5 == 0 {
			g.write(t, fmt.Sprintf(`{"id":%d,"method":"between"}`, i)) // run's, with no caller
		}
	}
	g.end()
	if len(g.requests) != 40 {
		t.Errorf("run served %d requests, want 40", len(g.requests))
	}
}

// A caller whose context ends while it reads stops reading at once, and
// leaves the role to the next; a line half-read when it stopped is
// finished by whoever reads next.
func TestTurnsCallerGivesUp(t *testing.T) {
	g := newTurnsRig(t)
	ch := g.expect("c1")
	g.w.Write([]byte(`{"id":"c0"`)) // half a line, no newline: the reader waits for the rest
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c0 := g.expect("c0")
	if _, err := callerWait(ctx, g.wire, c0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gave up with %v, want the deadline", err)
	}
	g.write(t, `,"result":0}`)
	g.write(t, `{"id":"c1","result":1}`)
	got, err := callerWait(context.Background(), g.wire, ch)
	if err != nil || got != "1" {
		t.Fatalf("next caller: %q, %v", got, err)
	}
	select { // the half line read when c0 gave up was finished, not lost
	case a := <-c0:
		if a != "0" {
			t.Fatalf("c0 got %q", a)
		}
	default:
		t.Fatal("the half-read line was lost")
	}
	g.end()
}

// The stream ending while a caller reads (the plugin dying) ends run,
// which ends the instance, and no one reads after it.
func TestTurnsEndWhileACallerReads(t *testing.T) {
	g := newTurnsRig(t)
	ch := g.expect("c0")
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := callerWait(ctx, g.wire, ch)
		waited <- err
	}()
	g.write(t, `{"id":7,"method":"last words"}`)
	<-g.served // read by the caller (run does not read while it waits), served by run; the caller reads on
	g.end()
	if why := <-g.ended; !errors.Is(why, errStdoutEnded) {
		t.Errorf("the stream's end gave %v, want %v", why, errStdoutEnded)
	}
	if len(g.requests) != 1 {
		t.Errorf("run served %q, want the last words", g.requests)
	}
	cancel() // the connection's owner tells the caller the wire is down
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller: %v", err)
	}
}
