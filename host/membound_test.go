package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/settings"
	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// memBound is how much a hostile plugin may grow the host, at the default
// bounds, with any one of its floods: the Go heap in use and the goroutine
// stacks, at their peak, above where they were before the flood. (The
// plugin runs in this process over transport/mem, so what it holds counts
// too; it holds little.) Without the bounds the same floods grew the host
// by gigabytes.
const memBound = 300 << 20

// The host's bounds, tested against the floods of a hostile plugin
// (internal/testplugin's flood tool and its endless model): each flood
// leaves the host under memBound, and the session goes on. It logs what
// it measured:
//
//	go test -run TestMemoryBound -v ./host
func TestMemoryBound(t *testing.T) {
	s := withSettings(func(s *settings.Settings) {
		s.Permissions.Allow = []string{"plugin__testplugin__*"}
		s.Provider.Plugin = "testplugin/scripted"
		// How long a plugin past a bound lives on before it is killed as
		// wedged: a matter of time, not of memory.
		s.Deadlines.Grace = 2 * time.Second
	})
	h, notices := newTestHost(t, s, testPlugin)
	ui := &fakeUI{}
	call := func(input string) (sdk.ToolOutput, error) {
		return h.CallTool(context.Background(), sdk.ToolCallRequest{ID: "flood", Name: "plugin__testplugin__flood", Input: json.RawMessage(input)}, 1, ui)
	}
	// Each notice is a round trip, slow under the race detector; the
	// flood is as high for every bound either way.
	noticeFlood := 100_000
	if raceEnabled {
		noticeFlood = 10_000
	}
	for _, c := range []struct {
		name  string
		flood func(t *testing.T)
	}{{
		name: "300k service/call requests whose answers it never reads",
		flood: func(t *testing.T) {
			if _, err := call(`{"what":"calls","n":300000}`); !errors.Is(err, sdk.ErrUnavailable) {
				t.Errorf("err = %v, want the plugin killed as wedged", err)
			}
		},
	}, {
		name: fmt.Sprintf("%d notices", noticeFlood),
		flood: func(t *testing.T) {
			before, start := len(notices.All()), time.Now()
			if out, err := call(fmt.Sprintf(`{"what":"notices","n":%d}`, noticeFlood)); err != nil || out.Text() != "ok" {
				t.Fatalf("%v %v\n%s", out, err, notices.text())
			}
			// The burst, then a summary a NoticeEvery (and one for rounding).
			if shown, most := len(notices.All())-before, bridge.NoticeBurst+int(time.Since(start)/bridge.NoticeEvery)+1; shown > most {
				t.Errorf("%d notices shown; the bound is %d", shown, most)
			}
		},
	}, {
		name: "a model streaming without end",
		flood: func(t *testing.T) {
			const stopped = "provider/stream unanswered past its deadline, and nothing answered for"
			before := strings.Count(notices.text(), stopped)
			_, err := h.Turn(context.Background(), "endless", &discardingUI{fakeUI: ui})
			if tooLarge := (*bridge.TooLargeError)(nil); !errors.As(err, &tooLarge) {
				t.Errorf("err = %v", err)
			}
			// It streams on past the cancel, so a grace later it is stopped
			// as wedged; wait for that here rather than have it land in
			// the middle of the next flood, as it did on a loaded machine.
			// (This stop's own notice: the first flood's wedged instance
			// said "stopping the wedged instance" too.)
			for limit := time.Now().Add(testutil.WaitLimit); strings.Count(notices.text(), stopped) == before; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(limit) {
					t.Fatalf("the plugin streaming past its cancel was not stopped:\n%s", notices.text())
				}
			}
		},
	}, {
		name: "three 200 MB stdout lines",
		flood: func(t *testing.T) {
			if out, err := call(`{"what":"lines","n":3,"bytes":209715200}`); err != nil || out.Text() != "ok" {
				t.Errorf("%v %v\nnotices:\n%s", out, err, notices.text())
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			m := measure(func() { c.flood(t) })
			t.Logf("%s in %v: peak +%d MiB (heap in use and stacks), +%d MiB after GC, Sys +%d MiB",
				c.name, time.Since(start).Round(time.Millisecond), m.peak>>20, m.retained>>20, m.sys>>20)
			if m.peak > memBound {
				t.Errorf("the host grew by %d MiB at its peak; the bound is %d MiB", m.peak>>20, memBound>>20)
			}
			// The session goes on: the next call answers, respawning the
			// plugin if the flood got it killed, once the backoff between
			// deaths in a row allows.
			echo := sdk.ToolCallRequest{ID: "after", Name: "plugin__testplugin__echo", Input: json.RawMessage(`{"text":"still here"}`)}
			for limit := time.Now().Add(testutil.WaitLimit); ; time.Sleep(50 * time.Millisecond) {
				out, err := h.CallTool(context.Background(), echo, 1, ui)
				if err == nil && out.Text() == "still here" {
					break
				}
				if !errors.Is(err, sdk.ErrUnavailable) || time.Now().After(limit) {
					t.Fatalf("after the flood: %v %v", out, err)
				}
			}
		})
	}
}

// discardingUI shows a turn's text to no one: the text of an endless model
// would otherwise pile up in the test's own UI.
type discardingUI struct{ *fakeUI }

func (discardingUI) Text(string) {}

// growth is how much memory f took.
type growth struct {
	peak     uint64 // heap in use and stacks, sampled while f ran
	retained uint64 // heap in use and stacks once f is done, after a GC
	sys      uint64 // what the runtime obtained from the system
}

// measure runs f and says how far memory grew above where it was before,
// after a GC. The peak is sampled every millisecond: runtime/metrics reads
// without stopping the world.
func measure(f func()) growth {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/total:bytes"},
	}
	read := func() (inUse, sys uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64() + samples[2].Value.Uint64(), samples[3].Value.Uint64()
	}
	runtime.GC()
	base, baseSys := read()
	var g growth
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if inUse, _ := read(); inUse > base {
				g.peak = max(g.peak, inUse-base)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	sampler.Wait()
	runtime.GC()
	inUse, sys := read()
	if inUse > base {
		g.retained = inUse - base
	}
	g.sys = sys - baseSys
	return g
}
