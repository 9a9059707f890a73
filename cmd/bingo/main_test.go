package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// The black-box tests run the real bingo binary, built once by TestMain,
// against the real example plugins, with HOME pointed at a fresh directory
// in each script.
var (
	binDir   string // holds the built bingo
	examples string // holds wordcount (Python) and wordcount-wasm with its plugin.wasm built
	// testpluginWasm is a plugin layer holding the Go test plugin built
	// for wasm, as testplugin/.
	testpluginWasm string
	// testpluginExec is the same plugin built for this machine, run as a
	// process.
	testpluginExec string
	// repo is this checkout, which a scaffolded wasm plugin builds on.
	repo string
	// goEnv is GOCACHE and GOMODCACHE, in that order.
	goEnv []string
	// wasmCache is the wazero compilation cache every script's HOME
	// links to (~/.bingo/data/cache/wasm), warmed with the test plugin
	// and the wasm example: each module compiles once per test binary,
	// not once per script (seconds of CPU each, most of what the wasm
	// scripts cost). A script that needs a cold start removes its link.
	wasmCache string
)

func TestMain(m *testing.M) {
	// A test that runs a Host in this process (TestSoak) has it compile
	// wasm modules in a child of this binary, as bingo does.
	if len(os.Args) > 1 && os.Args[1] == wasm.CompileChildArg {
		os.Exit(wasm.CompileChild(os.Args[2:], os.Stdin, os.Stderr))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "bingo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir = filepath.Join(tmp, "bin")
	examples = filepath.Join(tmp, "examples")
	root, _ := filepath.Abs("../..")
	steps := [][]string{
		{"go", "build", "-o", filepath.Join(binDir, "bingo"), "."},
		{"cp", "-r", filepath.Join(root, "examples", "plugins"), examples},
	}
	for _, s := range steps {
		if err := runCmd(s, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// The wasm builds: the wasm wordcount, and the Go test plugin as a wasm
	// plugin (testplugin-wasm/), whose tools let a script probe the sandbox.
	testpluginDir := filepath.Join(tmp, "testplugin-wasm", "testplugin")
	if err := os.MkdirAll(testpluginDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	manifest := `{"name": "testplugin", "version": "1.0.0", "entry": {"wasm": "${PLUGIN_ROOT}/plugin.wasm"}}`
	if err := os.WriteFile(filepath.Join(testpluginDir, "plugin.json"), []byte(manifest), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for out, pkg := range map[string]string{
		filepath.Join(examples, "wordcount-wasm", "plugin.wasm"): "./examples/plugins/wordcount-wasm",
		filepath.Join(testpluginDir, "plugin.wasm"):              "./internal/testplugin/cmd/testplugin",
	} {
		wasm := []string{"go", "build", "-o", out, pkg}
		if err := runCmd(wasm, func(c *exec.Cmd) { c.Dir = root; c.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm") }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	testpluginWasm = filepath.Dir(testpluginDir)

	execDir := filepath.Join(tmp, "testplugin-exec", "testplugin")
	native := []string{"go", "build", "-o", filepath.Join(execDir, "testplugin"), "./internal/testplugin/cmd/testplugin"}
	if err := runCmd(native, func(c *exec.Cmd) { c.Dir = root }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	execManifest := `{"name": "testplugin", "version": "1.0.0", "entry": {"command": "${PLUGIN_ROOT}/testplugin"}}`
	if err := os.WriteFile(filepath.Join(execDir, "plugin.json"), []byte(execManifest), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testpluginExec = filepath.Dir(execDir)
	// A script that builds a scaffolded plugin uses the go command's own
	// caches: with its fresh HOME it would rebuild the standard library.
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		return 1
	}
	goEnv = strings.Fields(string(out))
	repo = root
	wasmCache = filepath.Join(tmp, "wasm-cache")
	warmHome := filepath.Join(tmp, "wasm-warm")
	if err := linkWasmCache(warmHome); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, dir := range []string{testpluginWasm, filepath.Join(examples, "wordcount-wasm")} {
		warm := []string{filepath.Join(binDir, "bingo"), "--plugin-dir", dir, "plugins"}
		if err := runCmd(warm, func(c *exec.Cmd) { c.Dir = warmHome; c.Env = append(os.Environ(), "HOME="+warmHome) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// linkWasmCache makes home's wasm compilation cache the shared one.
func linkWasmCache(home string) error {
	cache := filepath.Join(home, ".bingo", "data", "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(wasmCache, 0o755); err != nil {
		return err
	}
	return os.Symlink(wasmCache, filepath.Join(cache, "wasm"))
}

func runCmd(args []string, tweak func(*exec.Cmd)) error {
	c := exec.Command(args[0], args[1:]...)
	if tweak != nil {
		tweak(c)
	}
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %v\n%s", args, err, out)
	}
	return nil
}

// setup gives each script a fresh HOME (but for the shared wasm
// compilation cache), the built binary on PATH, PLUGIN_SRC naming the
// example under test and PLUGIN its name (its directory's, which its
// manifest carries).
func setup(example string) func(*testscript.Env) error {
	return func(e *testscript.Env) error {
		home := filepath.Join(e.WorkDir, "home")
		if err := linkWasmCache(home); err != nil {
			return err
		}
		e.Setenv("HOME", home)
		// Where a script's plugins leave marks: made before any starts,
		// since $WORK holds home, and a grant of / gives of it only what
		// is there at start (it never reaches ~/.bingo).
		marks := filepath.Join(e.WorkDir, "marks")
		if err := os.Mkdir(marks, 0o755); err != nil {
			return err
		}
		e.Setenv("MARKS", marks)
		e.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		e.Setenv("EXAMPLES", examples)
		e.Setenv("PLUGIN_SRC", filepath.Join(examples, example))
		e.Setenv("PLUGIN", example)
		e.Setenv("TESTPLUGIN_WASM", testpluginWasm)
		e.Setenv("NO_COLOR", "1")
		e.Setenv("REPO", repo)
		e.Setenv("GOCACHE", goEnv[0])
		e.Setenv("GOMODCACHE", goEnv[1])
		e.Setenv("GOTOOLCHAIN", "local")
		e.Setenv("GOPROXY", "off") // what a plugin builds on is here, or missing
		return nil
	}
}

// The same scripts run against every example: they must answer alike,
// but for the name each carries.
func TestWordcountPython(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/wordcount", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":  grant,
		"expand": expand,
	}})
}

func TestWordcountWasm(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/wordcount", Setup: setup("wordcount-wasm"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":  grant,
		"expand": expand,
	}})
}

func TestWordcountNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the Node example (examples/plugins/wordcount-node) is not tested")
	}
	testscript.Run(t, testscript.Params{Dir: "testdata/wordcount", Setup: setup("wordcount-node"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":  grant,
		"expand": expand,
	}})
}

func TestCLI(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/cli", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":    grant,
		"status":   status,
		"wasmloop": wasmloop,
		"waitlog":  waitlog,
	}, Condition: condition})
}

// condition answers a script's [mountproc]: whether unshare -m is here
// and may mount a proc of its own in a mount namespace (root, not a
// container that forbids it); and [nouserns]: whether the script's
// nouserns can refuse user namespaces to what it runs.
func condition(cond string) (bool, error) {
	if cond != "nouserns" && cond != "mountproc" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return false, nil
	}
	if cond == "nouserns" {
		// Refused within, as nouserns means them to be.
		return runCmd(append(append([]string{"unshare"}, refuseUserns...), "sh", "-c", "! unshare -U true 2>/dev/null"), nil) == nil, nil
	}
	dir, err := os.MkdirTemp("", "mountproc")
	if err != nil {
		return false, err
	}
	defer os.Remove(dir)
	return runCmd([]string{"unshare", "-m", "mount", "-t", "proc", "proc", dir}, nil) == nil, nil
}

// A repository's plugins and settings as a stranger's: what runs before
// and after the person trusts it, and what reaches it of the person's.
func TestTrust(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/trust", Setup: setup("wordcount"), Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"grant":  grant,
		"status": status,
		"rss":    rss,
		"secs":   secs,
	}})
}

// rss MiB PROG ARGS... runs PROG (the built bingo, or one on PATH) in the script's directory, with its HOME
// and PATH, and fails if its peak resident memory passed MiB. Its output
// is dropped: run it again with exec to look at that.
func rss(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: rss MiB prog args...")
	}
	most, err := strconv.Atoi(args[0])
	ts.Check(err)
	cmd := measured(ts, args[1:])
	_ = cmd.Run() // its status is not the question
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		ts.Fatalf("no resource usage on this system")
	}
	got := ru.Maxrss >> 10 // KiB on Linux
	ts.Logf("%s: peak RSS %d MiB", args[1], got)
	if got > int64(most) {
		ts.Fatalf("%s: peak RSS %d MiB, over %d MiB", args[1], got, most)
	}
}

// measured returns the command PROG ARGS... (the built bingo, or one on
// PATH) to run in the script's directory with its HOME and PATH, its
// output dropped, for rss and secs.
func measured(ts *testscript.TestScript, args []string) *exec.Cmd {
	path := filepath.Join(binDir, args[0])
	if _, err := os.Stat(path); err != nil {
		path = args[0]
	}
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "PATH="+ts.Getenv("PATH"), "NO_COLOR=1")
	return cmd
}

// secs N PROG ARGS... runs PROG as rss does and fails if it took more
// than N seconds of CPU (user and system, its waited-for children's
// included). CPU, not wall time: it is the work the bound is about, and
// on a loaded machine the wall clock measures the other work too.
func secs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: secs N prog args...")
	}
	most, err := strconv.ParseFloat(args[0], 64)
	ts.Check(err)
	cmd := measured(ts, args[1:])
	start := time.Now()
	_ = cmd.Run() // its status is not the question
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		ts.Fatalf("%s did not run", args[1])
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	ts.Logf("%s: took %v of CPU (%v wall)", args[1], cpu.Round(time.Millisecond), wall.Round(time.Millisecond))
	if cpu.Seconds() > most {
		ts.Fatalf("%s: took %v of CPU, over %vs", args[1], cpu.Round(time.Millisecond), most)
	}
}

// expand FILE... rewrites each FILE with $VAR and ${VAR} replaced by the
// script's environment: a settings file that names the example's tools
// (plugin__${PLUGIN}__count), which cp copies as written.
func expand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: expand FILE...")
	}
	for _, f := range args {
		path := ts.MkAbs(f)
		ts.Check(os.WriteFile(path, []byte(os.Expand(ts.ReadFile(f), ts.Getenv)), 0o644))
	}
}

// status N PROG ARGS... runs PROG and fails unless it exits with status N;
// its stdout and stderr become the script's, as with exec.
func status(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N prog args...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// wasmloop start|main PATH writes a hand-assembled WASI command that loops
// forever (loop br 0 end): in its start section (start), which runs while
// the module is instantiated, or in _start (main), before it ever reads
// stdin. testscript cannot write binary files, and no Go guest can loop
// in a start section.
func wasmloop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "start" && args[0] != "main") {
		ts.Fatalf("usage: wasmloop start|main PATH")
	}
	bin := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
		0x03, 0x02, 0x01, 0x00, // funcs: 0 of type 0
		0x05, 0x03, 0x01, 0x00, 0x01, // memory: min 1 page
		0x07, 0x13, 0x02, // exports: 2
		0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // _start = func 0
		0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, // memory = memory 0
	}
	if args[0] == "start" {
		bin = append(bin, 0x08, 0x01, 0x00) // start: func 0
	}
	bin = append(bin, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b) // code: loop br 0 end; end
	path := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	ts.Check(os.WriteFile(path, bin, 0o644))
}

// grant NAME... grants each plugin named the whole file system in the
// person's settings (sandbox.NAME.write "/"), beside what the file says:
// for a script whose helper plugins leave markers or read each other's
// files, which is not what it tests. (What an exec plugin may reach by
// default is testdata/sandbox's.)
func grant(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: grant NAME...")
	}
	file := filepath.Join(ts.Getenv("HOME"), ".bingo", "settings.json")
	s := map[string]any{}
	if b, err := os.ReadFile(file); err == nil {
		ts.Check(json.Unmarshal(b, &s))
	}
	sb, _ := s["sandbox"].(map[string]any)
	if sb == nil {
		sb = map[string]any{}
	}
	for _, name := range args {
		g, _ := sb[name].(map[string]any)
		if g == nil {
			g = map[string]any{}
		}
		g["write"] = []string{"/"}
		sb[name] = g
	}
	s["sandbox"] = sb
	b, err := json.Marshal(s)
	ts.Check(err)
	ts.Check(os.MkdirAll(filepath.Dir(file), 0o755))
	ts.Check(os.WriteFile(file, b, 0o644))
}
