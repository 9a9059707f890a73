package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The built-in OpenAI-compatible provider against a fake server that
// misbehaves: it is held to the deadlines and limits a provider plugin is.
func TestOpenAIProvider(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/openai", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":     grant,
		"status":    status,
		"expand":    expand,
		"rss":       rss,
		"openai":    openaiServer,
		"timed":     timed,
		"servedMiB": servedMiB,
	}})
}

// served counts the bytes of answers each fake server wrote, by its
// OPENAI_URL (scripts run in parallel).
var served sync.Map // string → *atomic.Int64

// openai stall|endless starts a fake OpenAI-compatible server for the
// script, closed when it ends, and sets OPENAI_URL to its base URL:
//
//   - stall sends the headers and one chunk, then nothing for 30 s, then
//     closes: a server that hangs mid-answer;
//   - endless sends chunks of 16 KiB of text as fast as they are read,
//     until the client goes away or 256 MiB have gone.
//
// Neither ever ends its answer, so a client that is not held to its
// bounds waits 30 s, or reads 256 MiB.
func openaiServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || (args[0] != "stall" && args[0] != "endless") {
		ts.Fatalf("usage: openai stall|endless")
	}
	mode := args[0]
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // until then the server cannot see the client go
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		write := func(s string) bool {
			n, err := io.WriteString(w, s)
			sent.Add(int64(n))
			w.(http.Flusher).Flush()
			return err == nil
		}
		chunk := func(text string) string {
			return `data: {"object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":{"content":` + strconv.Quote(text) + `},"finish_reason":null}]}` + "\n\n"
		}
		switch mode {
		case "stall":
			write(chunk("thinking"))
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
		case "endless":
			piece := chunk(strings.Repeat("x", 16<<10))
			for sent.Load() < 256<<20 && write(piece) {
			}
		}
	}))
	ts.Defer(srv.Close)
	served.Store(srv.URL, &sent)
	ts.Setenv("OPENAI_URL", srv.URL)
}

// servedMiB MOST fails if the script's fake server wrote more than MOST
// MiB: the client went on reading past its cap.
func servedMiB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: servedMiB MOST")
	}
	most, err := strconv.Atoi(args[0])
	ts.Check(err)
	sent, ok := served.Load(ts.Getenv("OPENAI_URL"))
	if !ok {
		ts.Fatalf("no fake server: run openai first")
	}
	got := sent.(*atomic.Int64).Load()
	ts.Logf("the fake server wrote %.1f MiB", float64(got)/(1<<20))
	if got > int64(most)<<20 {
		ts.Fatalf("the fake server wrote %d bytes, over %d MiB", got, most)
	}
}

// timed MIN MAX N PROG ARGS... runs PROG as status does (exit status N,
// its output the script's) and fails unless it took between MIN and MAX
// (Go durations).
func timed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: timed MIN MAX N prog args...")
	}
	least, err := time.ParseDuration(args[0])
	ts.Check(err)
	most, err := time.ParseDuration(args[1])
	ts.Check(err)
	start := time.Now()
	status(ts, false, args[2:])
	took := time.Since(start)
	ts.Logf("%s took %v", args[3], took.Round(time.Millisecond))
	if took < least || took > most {
		ts.Fatalf("%s took %v, not between %v and %v", args[3], took.Round(time.Millisecond), least, most)
	}
}
