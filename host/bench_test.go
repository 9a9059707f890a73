package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
)

// cpuTime is the CPU time this process has used: on a shared machine a
// steadier measure of work than the wall clock.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOpenCached is what `bingo plugins` does in-process — Open, list,
// Close — with 1 and 20 Python plugins whose declarations are cached, so
// that none is started: the per-plugin cost of a run that starts nothing,
// without a process's start-up around it (cmd/bingo's BenchmarkLazyStartup
// is the whole process). Profile it with -cpuprofile.
func BenchmarkOpenCached(b *testing.B) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Skip("no python3")
	}
	python := strings.TrimSpace(string(out))
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprint("plugins=", n), func(b *testing.B) {
			home := b.TempDir()
			for i := range n {
				name := fmt.Sprintf("p%02d", i)
				dir := filepath.Join(home, ".bingo", "plugins", name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				script := filepath.Join(dir, "main.py")
				manifest := fmt.Sprintf(`{"name": %q, "version": "1", "entry": {"command": %q, "args": [%q, %q]}}`, name, python, script, name)
				for path, data := range map[string]string{script: testutil.NamedPlugin, filepath.Join(dir, "plugin.json"): manifest} {
					if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			cfg := Config{Home: home, Cwd: home, Environ: []string{"PATH=" + os.Getenv("PATH")}}
			open := func() []PluginInfo {
				h, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				return h.Plugins()
			}
			// An installed plugin's files are older than trust's settle
			// time: only then are their sums kept beside the cache entry,
			// and not read again.
			time.Sleep(2100 * time.Millisecond)
			open() // the cache, warm
			open() // and holding the settled sums
			for _, p := range open() {
				if p.Status != "idle" {
					b.Fatalf("%s is %s with a warm cache; want idle", p.Name, p.Status)
				}
			}
			cpu0 := cpuTime(b)
			for b.Loop() {
				open()
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
