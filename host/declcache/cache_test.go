package declcache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// plugin writes a plugin whose entry runs main.py, and loads it.
func plugin(t testing.TB, dir, name, script string) *manifest.Manifest {
	t.Helper()
	root := filepath.Join(dir, name)
	os.MkdirAll(root, 0o755)
	must(t, os.WriteFile(filepath.Join(root, "plugin.json"),
		[]byte(fmt.Sprintf(`{"name": %q, "version": "1", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}}`, name)), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "main.py"), []byte(script), 0o644))
	m, err := manifest.Load(root, manifest.LayerUser)
	must(t, err)
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func decl(name string) protocol.InitializeResult {
	return protocol.InitializeResult{Protocol: protocol.Version, Name: name, Version: "1"}
}

func TestLookupHitsOnlyWhatWasStoredForTheSameStart(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	m := plugin(t, dir, "p", "print(1)")
	start := Start{Transport: "exec", Root: m.Root, Dir: "/work", Config: json.RawMessage(`{"a":1}`),
		Env: []string{"HOME=/home/x", "SHLVL=1", "_=/usr/bin/bingo"}}

	k, hit, problem := c.Lookup(m, start)
	if hit != nil || problem != nil || !k.Valid() {
		t.Fatalf("empty cache: hit %v, problem %v, key valid %v", hit, problem, k.Valid())
	}
	must(t, c.Store(k, decl("p"), []string{"tools[0]: refused"}))
	_, hit, problem = c.Lookup(m, start)
	if hit == nil || problem != nil || !strings.Contains(string(hit.Declaration), `"name":"p"`) || len(hit.Refused) != 1 {
		t.Fatalf("after Store: hit %+v, problem %v", hit, problem)
	}

	// The shell's own bookkeeping is not part of what a plugin is given.
	shell := start
	shell.Env = []string{"HOME=/home/x", "SHLVL=2", "_=/bin/other", "OLDPWD=/tmp"}
	if _, hit, _ := c.Lookup(m, shell); hit == nil {
		t.Fatal("a new shell level missed the cache")
	}
	// Nor is PWD, the working directory: Dir says which directory the
	// declaration is keyed by (the project's, for most plugins).
	sub := start
	sub.Env = append(append([]string(nil), start.Env...), "PWD=/work/sub")
	if _, hit, _ := c.Lookup(m, sub); hit == nil {
		t.Fatal("another working directory of the same project missed the cache")
	}

	for what, change := range map[string]func(s *Start){
		"config":      func(s *Start) { s.Config = json.RawMessage(`{"a":2}`) },
		"environment": func(s *Start) { s.Env = []string{"HOME=/home/y"} },
		"directory":   func(s *Start) { s.Dir = "/elsewhere" },
		"grants":      func(s *Start) { s.Grants = []string{"writable"} },
		"transport":   func(s *Start) { s.Transport = "wasm" },
	} {
		s := start
		change(&s)
		if _, hit, _ := c.Lookup(m, s); hit != nil {
			t.Errorf("another %s hit the cache", what)
		}
	}

	// A changed script, or manifest, is another plugin.
	must(t, os.WriteFile(filepath.Join(m.Root, "main.py"), []byte("print(2)"), 0o644))
	if _, hit, _ := c.Lookup(m, start); hit != nil {
		t.Error("a changed script hit the cache")
	}
	must(t, os.WriteFile(filepath.Join(m.Root, "main.py"), []byte("print(1)"), 0o644))
	if _, hit, _ := c.Lookup(m, start); hit == nil {
		t.Error("the script as it was missed the cache")
	}
	must(t, os.WriteFile(m.File, []byte(`{"name": "p", "version": "2", "entry": {"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}}`), 0o644))
	m2, err := manifest.Load(m.Root, manifest.LayerUser)
	must(t, err)
	if _, hit, _ := c.Lookup(m2, start); hit != nil {
		t.Error("a changed manifest hit the cache")
	}
}

func TestAPluginKeepsItsLatestEntries(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	m := plugin(t, dir, "p", "")
	for i := range keep + 2 {
		k, _, _ := c.Lookup(m, Start{Dir: fmt.Sprint("/d", i)})
		must(t, c.Store(k, decl("p"), nil))
	}
	for i := range keep + 2 {
		_, hit, _ := c.Lookup(m, Start{Dir: fmt.Sprint("/d", i)})
		if want := i >= 2; (hit != nil) != want {
			t.Errorf("directory %d: hit %v, want %v (the latest %d kept)", i, hit != nil, want, keep)
		}
	}
}

func TestACorruptFileIsAMissAndALine(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	m := plugin(t, dir, "p", "")
	for _, junk := range []string{"{not json", `{"format": 99, "entries": []}`, `[1,2]`,
		header + "a line without its declaration\n", header + "{not json\t{}\n", header + `{"key":"k"}` + "\t{}"} {
		must(t, os.MkdirAll(cache, 0o700))
		must(t, os.WriteFile(filepath.Join(cache, "p.json"), []byte(junk), 0o600))
		k, hit, problem := c.Lookup(m, Start{})
		if hit != nil || problem == nil || !strings.Contains(problem.Error(), "starting the plugin instead") {
			t.Fatalf("%q: hit %v, problem %v; want a miss and a line", junk, hit, problem)
		}
		must(t, c.Store(k, decl("p"), nil))
		if _, hit, problem := c.Lookup(m, Start{}); hit == nil || problem != nil {
			t.Fatalf("%q: the next Store did not replace it: %v %v", junk, hit, problem)
		}
	}
	left, _ := filepath.Glob(filepath.Join(cache, ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestAFileThatCannotBeDigestedIsNotCached(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	m := plugin(t, dir, "p", "")
	must(t, os.Remove(filepath.Join(m.Root, "main.py")))
	must(t, os.Mkdir(filepath.Join(m.Root, "main.py"), 0o755)) // a directory: recorded, not read
	if k, _, problem := c.Lookup(m, Start{}); !k.Valid() || problem != nil {
		t.Fatalf("a directory is a record like any: %v", problem)
	}
	bad := *m
	bad.Name = "../x"
	if k, _, problem := c.Lookup(&bad, Start{}); k.Valid() || problem == nil {
		t.Fatal("a name that cannot be a file was keyed")
	}
}

// A plugin chooses its declaration's size: the cache holds at most maxFile
// of it a plugin, dropping the oldest entries to make room, caching none
// too large alone, and reading no file past the cap.
func TestAPluginsFileIsCapped(t *testing.T) {
	defer func(was int64) { maxFile = was }(maxFile)
	maxFile = 4 << 10
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	m := plugin(t, dir, "p", "")
	big := func(n int) protocol.InitializeResult {
		d := decl("p")
		d.Version = strings.Repeat("x", n)
		return d
	}
	for i := range 2 {
		k, _, _ := c.Lookup(m, Start{Dir: fmt.Sprint("/d", i)})
		must(t, c.Store(k, big(1500), nil))
	}
	k, _, _ := c.Lookup(m, Start{Dir: "/d2"})
	must(t, c.Store(k, big(1500), nil))
	for i, want := range []bool{false, true, true} {
		if _, hit, _ := c.Lookup(m, Start{Dir: fmt.Sprint("/d", i)}); (hit != nil) != want {
			t.Errorf("directory %d: hit %v, want %v (the oldest makes room)", i, hit != nil, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(cache, "p.json")); err != nil || fi.Size() > maxFile {
		t.Fatalf("the file is over the cap: %v %v", fi.Size(), err)
	}

	k, _, _ = c.Lookup(m, Start{Dir: "/huge"})
	if err := c.Store(k, big(int(maxFile)), nil); err == nil || !strings.Contains(err.Error(), "not cached") {
		t.Fatalf("a declaration over the cap alone: %v, want it refused with why", err)
	}
	if _, hit, _ := c.Lookup(m, Start{Dir: "/d2"}); hit == nil {
		t.Fatal("refusing one too large dropped the entries already kept")
	}

	// A file over the cap, however it got there, is a miss and a line.
	must(t, os.WriteFile(filepath.Join(cache, "p.json"), []byte(`{"format":1,"entries":[],"pad":"`+strings.Repeat("x", int(maxFile))+`"}`), 0o600))
	if _, hit, problem := c.Lookup(m, Start{Dir: "/d2"}); hit != nil || problem == nil || !strings.Contains(problem.Error(), "cap") {
		t.Fatalf("a file over the cap: hit %v, problem %v; want a miss and a line", hit, problem)
	}
}

// Only settled sums are written beside an entry: a file written just now
// could change again within its clock's granularity and keep its version,
// and a later process would believe the old sum.
func TestOnlySettledSumsAreKept(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	m := plugin(t, dir, "p", "print(1)") // written just now
	k, _, _ := c.Lookup(m, Start{})
	must(t, c.Store(k, decl("p"), nil))
	entries, err := read(filepath.Join(cache, "p.json"))
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("entries: %+v", entries)
	}
	for _, f := range entries[0].Files {
		if strings.HasPrefix(f.Path, m.Root) {
			t.Fatalf("sums of files written just now were kept: %+v", entries)
		}
	}
}

// A hit's declaration is decoded as Store was given it, without the
// handshake's checks: what makes that safe is the sum on its line, so a
// line changed by one byte, in its declaration or its head, is a miss
// and a line, and the next Store replaces the file.
func TestAnEditedEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	m := plugin(t, dir, "p", "")
	d := decl("p")
	d.Tools = []sdk.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	k, _, _ := c.Lookup(m, Start{})
	must(t, c.Store(k, d, nil))
	_, hit, problem := c.Lookup(m, Start{})
	if hit == nil || problem != nil {
		t.Fatalf("after Store: %v %v", hit, problem)
	}
	got, err := hit.Decode()
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("Decode: %+v %v, want %+v", got, err, d)
	}

	file := filepath.Join(cache, "p.json")
	good, err := os.ReadFile(file)
	must(t, err)
	for _, edit := range []struct{ from, to string }{
		{`"name":"t"`, `"name":"../t"`}, // the declaration
		{"\tsha256:", "\tsha256:0"},     // the head
	} {
		if !strings.Contains(string(good), edit.from) {
			t.Fatalf("%s not in %s", edit.from, good)
		}
		must(t, os.WriteFile(file, []byte(strings.Replace(string(good), edit.from, edit.to, 1)), 0o600))
		_, hit, problem := c.Lookup(m, Start{})
		if hit != nil || problem == nil || !strings.Contains(problem.Error(), "checksum") {
			t.Fatalf("%s edited: hit %v, problem %v; want a miss and a line", edit.from, hit, problem)
		}
	}
	must(t, c.Store(k, d, nil))
	if _, hit, problem := c.Lookup(m, Start{}); hit == nil || problem != nil {
		t.Fatalf("the next Store did not replace it: %v %v", hit, problem)
	}
}

// An entry whose sum matches but whose declaration this bingo cannot
// decode (written by another build under the same header) is refused by
// Decode, for the host to treat as a miss.
func TestDecodeRefusesWhatItCannotRead(t *testing.T) {
	e := Entry{Declaration: json.RawMessage(`{"protocol":"five"}`)}
	if _, err := e.Decode(); err == nil {
		t.Fatal("a declaration of another shape was decoded")
	}
}

// A head holds any path and any message, spaces, tabs, newlines and
// quotes included, and reads back as it was written; one that is not a
// head is refused.
func TestAHeadReadsBackAsWritten(t *testing.T) {
	e := Entry{Key: "sha256:abc",
		Files:   []trust.FileSum{{Path: "/a b/\tc\n\"d\".py", Version: "1:2:3:4:5", SHA256: "ff", Settled: true}, {Path: "/é", Version: "6:7", SHA256: "00", Settled: true}},
		Refused: []string{"tools[0].name: \"x y\" is not a name", "unknown key \"\\t\""},
		Failed:  "answered the handshake as \"a b\"\t"}
	h := appendHead(nil, e)
	if strings.ContainsAny(string(h), "\t\n") {
		t.Fatalf("a head holds a raw tab or newline: %q", h)
	}
	var got Entry
	if err := parseHead(string(h), &got); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("read back %+v, %v\nwant %+v", got, err, e)
	}
	for _, bad := range []string{"", "sha256:abc f", "sha256:abc f \"/p\" 1", "sha256:abc f /p 1 ff", "sha256:abc z \"y\"", "sha256:abc x open", "sha256:abc r \"open", "sha256:abc  f \"/p\" 1 ff"} {
		var e Entry
		if err := parseHead(bad, &e); err == nil {
			t.Errorf("%q read as a head: %+v", bad, e)
		}
	}
}

// storeNaming stores a declaration of name under key, naming files as
// its plugin's (settled sums, as a run long after they were written would
// keep).
func storeNaming(t testing.TB, c *Cache, name, key string, files ...string) {
	t.Helper()
	k := Key{name: name, digest: key}
	for _, f := range files {
		k.files = append(k.files, trust.FileSum{Path: f, Version: "1", SHA256: "ff", Settled: true})
	}
	must(t, c.Store(k, decl(name), nil))
}

// Prune removes the file of a plugin whose files are gone, and only that:
// not a plugin the caller found, not one whose files are still there
// (another project's), not one with an entry naming no file, not a file
// it cannot read.
func TestPruneRemovesOnlyGonePlugins(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	files := map[string][]string{}
	for _, name := range []string{"gone", "elsewhere", "found", "unsettled"} {
		m := plugin(t, dir, name, "print(1)")
		files[name] = []string{m.File, filepath.Join(m.Root, "main.py")}
	}
	for _, name := range []string{"gone", "elsewhere", "found"} {
		storeNaming(t, c, name, "k1", files[name]...)
		storeNaming(t, c, name, "k2", files[name][0])
	}
	storeNaming(t, c, "unsettled", "k1", files["unsettled"]...)
	storeNaming(t, c, "unsettled", "k2") // stored just after its files changed
	must(t, os.WriteFile(filepath.Join(cache, "junk.json"), []byte("{not a cache file"), 0o600))
	for _, name := range []string{"gone", "found", "unsettled"} {
		must(t, os.RemoveAll(filepath.Join(dir, name)))
	}

	found := func(name string) bool { return name == "found" }
	removed := c.Prune(found)
	if !slices.Equal(removed, []string{"gone"}) {
		t.Errorf("removed %q, want only gone", removed)
	}
	for name, want := range map[string]bool{"gone": false, "elsewhere": true, "found": true, "unsettled": true, "junk": true} {
		if _, err := os.Stat(filepath.Join(cache, name+".json")); (err == nil) != want {
			t.Errorf("%s.json there: %v, want %v", name, err == nil, want)
		}
	}

	// One entry whose files are there keeps the file, beside dead ones:
	// a plugin of that name in another place (another layer, another
	// project) still uses it. One file missing is enough to make an
	// entry dead.
	user := plugin(t, filepath.Join(dir, "user"), "twice", "")
	project := plugin(t, filepath.Join(dir, "project"), "twice", "")
	storeNaming(t, c, "twice", "user", user.File, filepath.Join(user.Root, "main.py"))
	storeNaming(t, c, "twice", "project", project.File, filepath.Join(project.Root, "main.py"))
	must(t, os.Remove(filepath.Join(project.Root, "main.py")))
	if removed := c.Prune(found); len(removed) != 0 {
		t.Errorf("removed %q, but twice is still in %s and elsewhere's files are there", removed, user.Root)
	}
	must(t, os.RemoveAll(user.Root))
	if removed := c.Prune(found); !slices.Equal(removed, []string{"twice"}) {
		t.Errorf("removed %q, want twice, gone from both places", removed)
	}
}

// PruneIfDue prunes once a day: at first, not again within the day
// (though a plugin has gone since), and again once the day is over, or
// if the stamp says a time yet to come.
func TestPruneIfDue(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	gone := func(name string) {
		m := plugin(t, dir, name, "print(1)")
		storeNaming(t, c, name, "k1", m.File)
		must(t, os.RemoveAll(filepath.Join(dir, name)))
	}
	none := func(string) bool { return false }
	gone("first")
	if removed := c.PruneIfDue(none); !slices.Equal(removed, []string{"first"}) {
		t.Fatalf("first prune removed %q, want first", removed)
	}
	gone("second")
	if removed := c.PruneIfDue(none); len(removed) != 0 {
		t.Fatalf("a prune within the day removed %q", removed)
	}
	stamp := filepath.Join(cache, pruneStamp)
	dayAgo := time.Now().Add(-pruneEvery - time.Minute)
	must(t, os.Chtimes(stamp, dayAgo, dayAgo))
	if removed := c.PruneIfDue(none); !slices.Equal(removed, []string{"second"}) {
		t.Fatalf("a prune a day later removed %q, want second", removed)
	}
	gone("third")
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(stamp, future, future))
	if removed := c.PruneIfDue(none); !slices.Equal(removed, []string{"third"}) {
		t.Fatalf("a prune with the stamp an hour ahead removed %q, want third", removed)
	}
}

// Only a hit's declaration is summed: a damaged declaration in another
// entry does not spoil the hit, and the next Store drops it rather than
// keep it under a fresh sum.
func TestOnlyTheHitsDeclarationIsSummed(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	c := New(cache, trust.NewSums())
	m := plugin(t, dir, "p", "")
	old, now := Start{Transport: "old"}, Start{Transport: "now"}
	kOld, _, _ := c.Lookup(m, old)
	must(t, c.Store(kOld, decl("p"), nil))
	kNow, _, _ := c.Lookup(m, now)
	must(t, c.Store(kNow, decl("p"), nil)) // first line now; old's is the second
	file := filepath.Join(cache, "p.json")
	data, err := os.ReadFile(file)
	must(t, err)
	i := strings.LastIndex(string(data), `"name":"p"`)
	must(t, os.WriteFile(file, []byte(string(data[:i])+`"name":"q"`+string(data[i+len(`"name":"p"`):])), 0o600))

	if _, hit, problem := c.Lookup(m, now); hit == nil || problem != nil {
		t.Fatalf("the intact hit: %v, %v", hit, problem)
	}
	if _, hit, problem := c.Lookup(m, old); hit != nil || problem == nil {
		t.Fatalf("the damaged entry: hit %v, problem %v; want a miss and a line", hit, problem)
	}
	must(t, c.Store(kNow, decl("p"), nil))
	if data, _ := os.ReadFile(file); strings.Count(string(data), "\n") != 2 {
		t.Fatalf("the damaged entry was kept by the next Store:\n%s", data)
	}
}

// An entry another build of bingo kept is a miss: a hit skips the
// handshake's checks, which may have changed with the build.
func TestAnotherBuildsEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	m := plugin(t, dir, "p", "")
	k, _, _ := c.Lookup(m, Start{})
	must(t, c.Store(k, decl("p"), nil))
	if _, hit, _ := c.Lookup(m, Start{}); hit == nil {
		t.Fatal("this build's entry missed")
	}
	this := build
	t.Cleanup(func() { build = this })
	build = func() string { return "another build" }
	if _, hit, _ := c.Lookup(m, Start{}); hit != nil {
		t.Fatal("another build's entry was a hit")
	}
}

// A failed handshake is cached as one, beside the plugin's declarations
// for other starts, and hits only while the plugin's files are the same.
func TestStoreFailure(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	m := plugin(t, dir, "p", "print(1)")
	other := Start{Transport: "exec", Root: m.Root, Dir: "/elsewhere"}
	k, _, _ := c.Lookup(m, other)
	must(t, c.Store(k, decl("p"), nil))
	start := Start{Transport: "exec", Root: m.Root, Dir: "/work"}
	k, _, _ = c.Lookup(m, start)
	why := "answered the handshake as \"q r\",\tbut its manifest names it \"p\""
	must(t, c.StoreFailure(k, why))

	_, hit, problem := c.Lookup(m, start)
	if hit == nil || problem != nil || hit.Failed != why || string(hit.Declaration) != "null" {
		t.Fatalf("after StoreFailure: hit %+v, problem %v", hit, problem)
	}
	if _, hit, _ := c.Lookup(m, other); hit == nil || hit.Failed != "" || !strings.Contains(string(hit.Declaration), `"name":"p"`) {
		t.Fatalf("the other start's declaration is lost or failed: %+v", hit)
	}
	must(t, os.WriteFile(filepath.Join(m.Root, "main.py"), []byte("print(2)"), 0o644))
	if _, hit, _ := c.Lookup(m, start); hit != nil {
		t.Fatalf("the plugin's files changed, and its failure still hits: %+v", hit)
	}
}
