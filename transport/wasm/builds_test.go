package wasm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
)

// buildEmbed builds testdata/embed once per ldflags given, by name, side
// by side.
func buildEmbed(t *testing.T, ldflags map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	errs := make(chan error, len(ldflags))
	var wg sync.WaitGroup
	for name, flags := range ldflags {
		bin := filepath.Join(dir, name)
		bins[name] = bin
		wg.Go(func() {
			out, err := exec.Command("go", "build", "-ldflags", flags, "-o", bin, "./testdata/embed").CombinedOutput()
			if err != nil {
				err = &buildError{name: "embed " + name, out: string(out), err: err}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return bins
}

type buildError struct {
	name, out string
	err       error
}

func (e *buildError) Error() string {
	return "building " + e.name + ": " + e.err.Error() + "\n" + e.out
}

// runEmbed runs one build of embed on cache and module, and returns its
// line.
func runEmbed(t *testing.T, bin, cache, module string) string {
	t.Helper()
	out, _ := exec.Command(bin, "-cache", cache, "-module", module).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// settle waits until path has not changed for fileversion.SettleTime, so
// that the first Host to read it keeps its sum: a module file installed a
// while ago, as an upgrade meets it.
func settle(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(fileversion.Of(fi).Changed.Add(fileversion.SettleTime + 50*time.Millisecond)))
}

// Two builds of one program over one cache, as an upgrade meets it: the
// second finds the module's sum and its metered form kept by the first,
// and compiles it in its own compile child under the default bounds (it
// has not compiled it before), never under zero bounds; a third run of
// the first build finds it compiled. No run is refused, and no refusal is
// remembered. A build without the compile-child hook is told what to add.
func TestTwoBuildsOverOneCache(t *testing.T) {
	module := writeModule(t, "m.wasm", exitModule(15))
	bins := buildEmbed(t, map[string]string{
		"old":  "-X main.hook=yes -X main.build=old",
		"new":  "-X main.hook=yes -X main.build=new",
		"bare": "-X main.build=bare",
	})
	settle(t, module)
	cache := t.TempDir()
	for i, build := range []string{"old", "new", "old", "new"} {
		if got := runEmbed(t, bins[build], cache, module); got != "exit 15" {
			t.Fatalf("run %d, build %s: %q, want exit 15", i+1, build, got)
		}
		if i == 0 {
			if recs := records(t, cache); len(recs) != 1 {
				t.Fatalf("the first run kept sums %v, want one: the next would read the module, not meet the kept path", recs)
			}
		}
	}
	if refused, _ := filepath.Glob(filepath.Join(cache, refusalVersion, "*")); len(refused) > 0 {
		t.Errorf("refusals remembered: %v", refused)
	}

	got := runEmbed(t, bins["bare"], t.TempDir(), module)
	if !strings.Contains(got, "must handle wasm.CompileChildArg first thing in main") || strings.Contains(got, "flag provided") {
		t.Errorf("a build without the hook: %q, want what to add", got)
	}
}
