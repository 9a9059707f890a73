package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
)

// BenchmarkStartup times a whole cold `bingo plugins` run — start every
// plugin, handshake, list, stop — with 0, 1 and 16 Python plugins
// installed. Plugins start in parallel, so plugins=16 over plugins=1 is far
// below 16 (on 2 cores the interpreters' own start-up still competes for
// CPU). Cold: the declaration cache is emptied before each run, or the
// runs after the first would start nothing (BenchmarkLazyStartup).
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{0, 1, 16} {
		b.Run(fmt.Sprintf("plugins=%d", n), func(b *testing.B) {
			home := b.TempDir()
			installNamed(b, home, n)
			for range b.N {
				if err := os.RemoveAll(filepath.Join(home, ".bingo", "data", "cache", "declarations")); err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(filepath.Join(binDir, "bingo"), "plugins")
				cmd.Env = append(os.Environ(), "HOME="+home)
				cmd.Dir = home
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				if n > 0 && !containsAll(string(out), "running", n) {
					b.Fatalf("not every plugin started:\n%s", out)
				}
			}
		})
	}
}

// installNamed installs n testutil.NamedPlugins, p00, p01, …, in home, each with its
// own copy of the script (as n plugins would have).
func installNamed(b *testing.B, home string, n int) {
	python := interpreter(b)
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		dir := filepath.Join(home, ".bingo", "plugins", name)
		script := filepath.Join(dir, "named.py")
		manifest := fmt.Sprintf(`{"name": %q, "version": "1", "entry": {"command": %q, "args": [%q, %q]}}`, name, python, script, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for path, data := range map[string]string{script: testutil.NamedPlugin, filepath.Join(dir, "plugin.json"): manifest} {
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkStartupFloor is the baseline for BenchmarkStartup/plugins=16:
// the same 16 interpreters started at once and importing json, with no
// bingo at all. On 2 cores their start-up is most of the cost.
func BenchmarkStartupFloor(b *testing.B) {
	python := interpreter(b)
	for range b.N {
		cmds := make([]*exec.Cmd, 16)
		for i := range cmds {
			cmds[i] = exec.Command(python, "-c", "import json, sys")
			if err := cmds[i].Start(); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range cmds {
			if err := c.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// interpreter is python3's real executable. A version manager's shim (pyenv
// here) is a shell script costing ~0.8 s of CPU per start, which would
// measure the shim, not bingo.
func interpreter(b *testing.B) string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func containsAll(s, sub string, n int) bool { return strings.Count(s, sub) == n }

// BenchmarkLazyStartup is the budget on start-up not growing with what is
// installed: `bingo plugins` (which starts nothing whose declaration is
// cached) and `bingo complete '/p00 x'` (which starts p00 only), with 20
// Python plugins installed against 1, on a warm declaration cache, the two
// homes interleaved. Budget: 20 within 1.3x of 1.
func BenchmarkLazyStartup(b *testing.B) {
	one, twenty := b.TempDir(), b.TempDir()
	installNamed(b, one, 1)
	installNamed(b, twenty, 20)
	// An installed plugin's files are older than the trust package's
	// settle time (2s): only then are their sums kept beside the cache
	// entry, and not read again by each run. Without the wait every run
	// measured here would be one just after an install.
	time.Sleep(2100 * time.Millisecond)
	for _, args := range [][]string{{"plugins"}, {"complete", "/p00 x"}} {
		b.Run(args[0], func(b *testing.B) {
			for _, home := range []string{one, twenty} {
				bingoIn(b, home, args...) // the cache, warm
			}
			var t1, t20 []float64
			for b.Loop() {
				t1 = append(t1, bingoIn(b, one, args...).wall)
				t20 = append(t20, bingoIn(b, twenty, args...).wall)
			}
			b.ReportMetric(median(t1)*1e3, "1-plugin-ms")
			b.ReportMetric(median(t20)*1e3, "20-plugins-ms")
			b.ReportMetric(median(t20)/median(t1), "ratio-20/1(budget-1.3)")
		})
	}
}

// BenchmarkLazyRSS is the budget on memory not growing with what is
// installed: the peak RSS of a bingo process running a turn (the scripted
// model asking for plugin__wordcount__count) with 20 wasm plugins
// installed against 1 — wordcount, and 19 others the turn does not use,
// each its own module (benchguest, with a section that differs) — warm
// caches, interleaved. The RSS is the bingo process's own (bingoIn).
// Budget: 20 within 2x of 1.
func BenchmarkLazyRSS(b *testing.B) {
	guest := filepath.Join(b.TempDir(), "benchguest.wasm")
	build := exec.Command("go", "build", "-o", guest, "./testdata/benchguest")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	bin, err := os.ReadFile(guest)
	if err != nil {
		b.Fatal(err)
	}
	one, twenty := wasmHome(b, bin, 1), wasmHome(b, bin, 20)
	turn := []string{"--print", "how many words are in notes.txt?"}
	for _, home := range []string{one, twenty, one, twenty} {
		bingoIn(b, home, turn...) // both caches, warm
	}
	var r1, r20 []float64
	for b.Loop() {
		r1 = append(r1, bingoIn(b, one, turn...).maxRSS)
		r20 = append(r20, bingoIn(b, twenty, turn...).maxRSS)
	}
	b.ReportMetric(median(r1)/1024, "1-plugin-MiB")
	b.ReportMetric(median(r20)/1024, "20-plugins-MiB")
	b.ReportMetric(median(r20)/median(r1), "ratio-20/1(budget-2)")
}

// wasmHome installs the scripted model and n wasm plugins: wordcount, and
// wc01… with a custom section naming each appended, so that no two are
// one module.
func wasmHome(b *testing.B, module []byte, n int) string {
	home := b.TempDir()
	plugins := filepath.Join(home, ".bingo", "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(examples, "scripted-model"), filepath.Join(plugins, "scripted-model")).CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	files := map[string]string{
		filepath.Join(home, ".bingo", "settings.json"): `{"provider": {"plugin": "scripted-model/model"}, "permissions": {"allow": ["plugin__wordcount__count"]}}`,
		filepath.Join(home, "notes.txt"):               "the quick brown fox\njumps over the lazy dog\n",
	}
	for i := range n {
		name, args := "wordcount", ""
		if i > 0 {
			name = fmt.Sprintf("wc%02d", i)
			args = fmt.Sprintf(`, "args": [%q]`, name)
		}
		dir := filepath.Join(plugins, name)
		files[filepath.Join(dir, "plugin.json")] = fmt.Sprintf(`{"name": %q, "version": "1", "entry": {"wasm": "${PLUGIN_ROOT}/plugin.wasm"%s}}`, name, args)
		section := append([]byte{0, byte(len("bench") + 1 + len(name)), byte(len("bench"))}, "bench"+name...)
		files[filepath.Join(dir, "plugin.wasm")] = string(module) + string(section)
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return home
}

// cost is what one bingo run cost.
type cost struct {
	wall   float64 // seconds
	maxRSS float64 // KiB: the bingo process's own peak (VmHWM), its plugins' processes not counted
}

// bingoIn runs bingo args in home, as its HOME and working directory,
// reading its peak RSS from /proc while it runs: the high-water mark only
// rises, so the last reading before it exits is its peak but for the last
// milliseconds. (wait4's would be the larger of bingo's and any child's.)
func bingoIn(b *testing.B, home string, args ...string) cost {
	cmd := exec.Command(filepath.Join(binDir, "bingo"), args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var hwm float64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if kib, ok := vmHWM(status); ok {
			hwm = kib
		}
		select {
		case err := <-done:
			wall := time.Since(t0).Seconds()
			if err != nil {
				b.Fatalf("bingo %v: %v\n%s", args, err, out.Bytes())
			}
			return cost{wall: wall, maxRSS: hwm}
		case <-tick.C:
		}
	}
}

// vmHWM reads a process's peak RSS, in KiB, from its /proc status file.
func vmHWM(status string) (float64, bool) {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kib, err == nil
		}
	}
	return 0, false
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
