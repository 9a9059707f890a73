package declcache

import (
	"io"
	"slices"
	"testing"
)

type config struct {
	Path   string
	Env    map[string]string
	Mounts []struct{ Dir string }
	Cwd    string
	Log    io.Writer
	Hook   func()
	Shared *int
}

func TestFieldsTakesEveryDataFieldButThoseSkipped(t *testing.T) {
	base := Fields(config{}, "Cwd")
	for name, c := range map[string]config{
		"Path":   {Path: "m.wasm"},
		"Env":    {Env: map[string]string{"A": "1"}},
		"Mounts": {Mounts: []struct{ Dir string }{{"/d"}}},
	} {
		if slices.Equal(Fields(c, "Cwd"), base) {
			t.Errorf("setting %s left the lines as they were: %q", name, base)
		}
	}
	n := 1
	if got := Fields(config{Cwd: "/elsewhere", Log: io.Discard, Hook: func() {}, Shared: &n}, "Cwd"); !slices.Equal(got, base) {
		t.Errorf("a skipped field, a writer, a func or a pointer changed the lines: %q, want %q", got, base)
	}
	a := Fields(config{Env: map[string]string{"A": "1", "B": "2", "C": "3"}})
	for range 20 {
		if b := Fields(config{Env: map[string]string{"C": "3", "B": "2", "A": "1"}}); !slices.Equal(a, b) {
			t.Fatalf("equal maps gave %q and %q", a, b)
		}
	}
}

func TestFieldsRefusesASkipItCannotFind(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("skipping a field config does not have did not panic")
		}
	}()
	Fields(config{}, "Gone")
}
