package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// Guests written in C, which call the WASI imports as they please, where a
// Go guest's runtime decides which calls and arguments reach the host:
// each script builds its own with cguest and runs it through bingo.
func TestWASIGuests(t *testing.T) {
	requireClang(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/wasi", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":     grant,
		"cguest":    cguest,
		"rustguest": rustguest,
		"status":    status,
		"rss":       rss,
		"secs":      secs,
		"linemax":   linemax,
	}, Condition: func(cond string) (bool, error) {
		if cond != "rust" {
			return false, fmt.Errorf("unknown condition %q", cond)
		}
		return haveRust(t), nil
	}})
}

// requireClang skips the test without clang and wasi-libc (Debian: clang
// lld wasi-libc libclang-rt-14-dev-wasm32), except under CI, where it
// fails: CI installs them (.ci/run).
func requireClang(t *testing.T) {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "probe.c")
	if err := os.WriteFile(probe, []byte("#include <stdio.h>\nint main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("clang", "--target=wasm32-wasi", "-O2", "-o", probe+".wasm", probe).CombinedOutput()
	if err == nil {
		return
	}
	msg := "no C compiler for WASI (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32): " + err.Error() + "\n" + string(out)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// cguest OUT SRC compiles the C file SRC to the WASI command OUT with
// clang and wasi-libc.
func cguest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cguest OUT SRC")
	}
	out := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(out), 0o755))
	if b, err := exec.Command("clang", "--target=wasm32-wasi", "-O2", "-o", out, ts.MkAbs(args[1])).CombinedOutput(); err != nil {
		ts.Fatalf("clang: %v\n%s", err, b)
	}
}

// linemax stdout|stderr N fails if a line of the last command's output is
// longer than N characters.
func linemax(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "stdout" && args[0] != "stderr") {
		ts.Fatalf("usage: linemax stdout|stderr N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if utf8.RuneCountInString(line) > n {
			ts.Fatalf("a line of %d characters, over %d: %s", utf8.RuneCountInString(line), n, line)
		}
	}
}

// haveRust says whether Debian's Rust can build for WASI (rustc cargo
// libstd-rust-dev-wasm32 librust-serde-json-dev); without it, under CI,
// the test fails: CI installs them (.ci/run).
func haveRust(t *testing.T) bool {
	for _, f := range []string{"/usr/bin/cargo", "/usr/bin/rustc", "/usr/lib/rustlib/wasm32-wasi", "/usr/share/cargo/registry"} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("no Rust for WASI: %v", err)
			}
			return false
		}
	}
	return true
}

// rustguest OUT SRC compiles the Rust file SRC to the WASI command OUT with
// Debian's rustc (by its path: a rustup one earlier on PATH may lack the
// target).
func rustguest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: rustguest OUT SRC")
	}
	out := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(out), 0o755))
	if b, err := exec.Command("/usr/bin/rustc", "--target", "wasm32-wasi", "-O", "-C", "strip=debuginfo", "-o", out, ts.MkAbs(args[1])).CombinedOutput(); err != nil {
		ts.Fatalf("rustc: %v\n%s", err, b)
	}
}
