package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// CheckDepth agrees with encoding/json's limit, which the plugin wire
// holds to, on nesting of every kind and at its edge, and strings (with
// their escapes) do not count.
func TestCheckDepth(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	cases := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		deep("[", "]", MaxDepth),
		deep("[", "]", MaxDepth+1),
		deep(`{"a":`, "}", MaxDepth),
		deep(`{"a":`, "}", MaxDepth+1),
		deep(`[{"b":`, "}]", MaxDepth/2),
		deep(`[{"b":`, "}]", MaxDepth/2+1),
		`"` + strings.Repeat("[", 2*MaxDepth) + `"`,
		`["\"` + strings.Repeat("[", 2*MaxDepth) + `"]`,
		`["\\",` + deep("[", "]", MaxDepth-1) + `]`,
		`["\\",` + deep("[", "]", MaxDepth) + `]`,
		`["\\\"[[[", ` + deep("[", "]", MaxDepth-1) + `]`,
		`{"id":` + strings.Repeat("[", MaxDepth+1), // never closed: refused as soon as it is too deep
	}
	for _, c := range cases {
		var v any
		jsonErr := json.Unmarshal([]byte(c), &v)
		jsonDeep := jsonErr != nil && strings.Contains(jsonErr.Error(), "exceeded max depth")
		got := CheckDepth([]byte(c), 0)
		if (got != nil) != jsonDeep {
			t.Errorf("%.40q…: CheckDepth = %v, encoding/json = %v", c, got, jsonErr)
		}
		var de *DepthError
		if got != nil && (!errors.As(got, &de) || de.Max != MaxDepth) {
			t.Errorf("%.40q…: %v is not a DepthError of MaxDepth", c, got)
		}
	}
}

// Text in pieces is followed across them, strings and escapes included,
// and once refused stays refused; a Max of its own holds.
func TestNestingInPieces(t *testing.T) {
	text := []byte(`{"s":"a\"[[[\\","x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`)
	for size := 1; size < 7; size++ {
		var n Nesting
		for b := text; len(b) > 0; b = b[min(size, len(b)):] {
			if _, err := n.Write(b[:min(size, len(b))]); err != nil {
				t.Fatalf("pieces of %d: %v", size, err)
			}
		}
	}
	var n Nesting
	if _, err := n.Write([]byte("[" + string(text))); err == nil || err.Error() != "nested deeper than 10000 arrays and objects" {
		t.Fatalf("one level more: %v", err)
	}
	if _, err := n.Write([]byte("1")); err == nil {
		t.Fatal("after the refusal: no error")
	}
	if err := CheckDepth([]byte(strings.Repeat("[", 1000)), 1000); err != nil {
		t.Fatalf("1000 under a Max of 1000: %v", err)
	}
	if err := CheckDepth([]byte(strings.Repeat("[", 1001)), 1000); err == nil || err.Error() != "nested deeper than 1000 arrays and objects" {
		t.Fatalf("1001 under a Max of 1000: %v", err)
	}
}

// The check is linear: the 4,000,000-deep line that overflowed the
// host's stack is refused at once, as is a line of 64 MiB of strings.
func TestCheckDepthIsCheap(t *testing.T) {
	start := time.Now()
	line := append([]byte(`{"jsonrpc":"2.0","id":`), bytes.Repeat([]byte("["), 4_000_000)...)
	if err := CheckDepth(line, 0); err == nil {
		t.Fatalf("4,000,000 deep: %v", err)
	}
	long := append(append([]byte(`["`), bytes.Repeat([]byte("ab[{"), 16<<20)...), `"]`...)
	if err := CheckDepth(long, 0); err != nil {
		t.Fatalf("a long string: %v", err)
	}
	// Alone it takes half a second, and under -race five on a loaded
	// machine; the quadratic scan it replaced took minutes at this depth.
	bound := 5 * time.Second
	if raceEnabled {
		bound = 60 * time.Second
	}
	if d := time.Since(start); d > bound {
		t.Errorf("took %v, over %v", d, bound)
	}
}
