package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/internal/testplugin"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// floodCases are a hostile plugin's floods (testplugin's flood tool and
// its endless model): the host's bounds hold them off the same way over
// every transport, and the plugin is answered again after. How much memory
// they cost the host is host.TestMemoryBound's to measure; this is about
// the rules.
var floodCases = []tpCase{
	{name: "requests-unread", tweak: func(o *bridge.Options) { o.Deadlines.Grace = 500 * time.Millisecond },
		run: func(t *testing.T, r *rig) {
			// It stops reading, and floods: once MaxPluginRequests are
			// waiting on answers it does not read, the host stops reading
			// too, and the blocked answer gets it killed as wedged.
			if _, err := r.call(context.Background(), "flood", `{"what":"calls","n":100000}`, sessionDir, nil); !errors.Is(err, sdk.ErrUnavailable) {
				t.Fatalf("flood calls = %v, want the plugin killed", err)
			}
			n := r.notices.Next(t)
			if !strings.Contains(n.Message, "not reading its input: sending the answer to its request blocked") {
				t.Errorf("notice = %+v, want the wedge notice", n)
			}
			r.waitStatus("dead")
			answersAgain(t, r)
			r.plugin.Close()
			if all := r.notices.All(); len(all) != 1 {
				t.Errorf("want exactly one notice for the wedged instance, got %v", all)
			}
		}},

	{name: "notices", run: func(t *testing.T, r *rig) {
		const n = 500
		start := time.Now()
		if out := r.mustCall("flood", jsonOf(map[string]any{"what": "notices", "n": n}), sessionDir, nil); out.Text() != "ok" {
			t.Fatalf("flood notices = %s", jsonOf(out))
		}
		r.plugin.Close() // summarises what is left
		shown := r.notices.All()
		if most := bridge.NoticeBurst + int(time.Since(start)/bridge.NoticeEvery) + 2; len(shown) > most {
			t.Errorf("%d notices shown for %d; the bound is %d", len(shown), n, most)
		}
		if last := shown[len(shown)-1].Message; !strings.HasPrefix(last, "… and ") {
			t.Errorf("the last notice is %q, want the summary", last)
		}
		if got := strings.Count(r.log.String(), "notice not shown"); got+len(shown) < n {
			t.Errorf("%d notices not shown reached the log, %d were shown, of %d", got, len(shown), n)
		}
	}},

	{name: "long-lines", tweak: func(o *bridge.Options) { o.MaxLine = 1 << 20 },
		run: func(t *testing.T, r *rig) {
			out := r.mustCall("flood", `{"what":"lines","n":3,"bytes":4194304}`, sessionDir, nil)
			if out.Text() != "ok" {
				t.Fatalf("flood lines = %s", jsonOf(out))
			}
			if got := strings.Count(r.log.String(), "line exceeds the size cap"); got != 3 {
				t.Errorf("%d over-cap lines logged, want 3, one a line", got)
			}
			answersAgain(t, r)
		}},

	{name: "endless-model", tweak: func(o *bridge.Options) {
		o.Limits.ProviderResponseMiB = 1
		o.Deadlines.Grace = 500 * time.Millisecond
	}, run: func(t *testing.T, r *rig) {
		var got int
		_, err := r.c.Providers[0].Stream(context.Background(), sdk.ProviderRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: "endless"}}},
			func(ev sdk.StreamEvent) { got += len(ev.Text) }) // deltas are delivered in order, one at a time
		if tooLarge := (*bridge.TooLargeError)(nil); !errors.As(err, &tooLarge) {
			t.Fatalf("endless stream = %v, want a *bridge.TooLargeError", err)
		}
		if got > 1<<20 {
			t.Errorf("%d bytes reached the caller past the 1 MiB cap", got)
		}
		// It does not stop when told: Grace later it is killed as wedged.
		for _, want := range []string{"sent more than 1 MiB; cancelled it", "unanswered past its deadline"} {
			if n := r.notices.Next(t); !strings.Contains(n.Message, want) {
				t.Errorf("notice = %+v, want one saying %q", n, want)
			}
		}
		r.waitStatus("dead")
		answersAgain(t, r)
	}},
}

// TestFloods runs the flood cases over every testplugin transport, as
// TestFloods/<transport>/<case>.
func TestFloods(t *testing.T) {
	for _, tr := range testpluginTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range floodCases {
				t.Run(c.name, func(t *testing.T) {
					r, err := tryStartRig(t, testplugin.Name, tr.new, c.tweak)
					if err != nil {
						t.Fatal(err)
					}
					c.run(t, r)
				})
			}
		})
	}
}

// answersAgain waits for the plugin to answer a call, respawned if the
// flood got it killed. A read may give up waiting for a slow respawn (a
// wasm instantiate under -race); the respawn goes on and serves the next.
func answersAgain(t *testing.T, r *rig) {
	t.Helper()
	for limit := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
		out, err := r.call(context.Background(), "echo", `{"text":"again"}`, sessionDir, nil)
		if err == nil && out.Text() == "again" {
			return
		}
		if !errors.Is(err, sdk.ErrUnavailable) || time.Now().After(limit) {
			t.Fatalf("after the flood: %s, %v", jsonOf(out), err)
		}
	}
}
