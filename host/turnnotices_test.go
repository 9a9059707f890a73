package host

import (
	"reflect"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/bridge"
)

// Within a turn a notice is said once, and once more at its end with its
// count if it repeated; outside a turn each is said as it comes.
func TestTurnNoticesSayEachOnce(t *testing.T) {
	var said []string
	tn := &turnNotices{say: func(n bridge.Notice) { said = append(said, n.String()) }}
	drop := bridge.Notice{Plugin: "ctx", Level: "warn", Message: "contributor slow dropped from this round"}
	other := bridge.Notice{Plugin: "ctx", Level: "warn", Message: "hook guard decided nothing"}
	tn.notify(drop)
	tn.notify(drop)
	tn.begin()
	for range 12 {
		tn.notify(drop)
	}
	tn.notify(other)
	tn.end()
	tn.notify(drop)
	want := []string{
		"plugin ctx: contributor slow dropped from this round",
		"plugin ctx: contributor slow dropped from this round",
		"plugin ctx: contributor slow dropped from this round",
		"plugin ctx: hook guard decided nothing",
		"plugin ctx: contributor slow dropped from this round (12 times in this turn)",
		"plugin ctx: contributor slow dropped from this round",
	}
	if !reflect.DeepEqual(said, want) {
		t.Fatalf("said %q, want %q", said, want)
	}
}
